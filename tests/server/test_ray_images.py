"""`coderl images pull`: task images pulled and unpacked ahead, here and on every sandbox node of a Ray
cluster (a local cluster: a head without sandbox capacity and one sandbox node), into each node's
cache; an image no node can have is reported per node and fails the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from coderl.server.ray_images import pull_on_nodes, unpack_here
from tests.helpers.images import DEBIAN, local_bases

# Heavy (CODERL_TEST_HEAVY=1): 35 s at load 5, most of it the cluster; CI still runs `coderl images pull`
# into a node's cache (tests/server/test_sessions_remote_images.py) and Ray placement on sandbox nodes
# (test_ray_sessions.py): README.md, "Test tiers".
pytestmark = [pytest.mark.heavy, pytest.mark.ray, pytest.mark.timeout(1800)]


def test_pull_here_and_on_the_sandbox_nodes(tmp_path):
    local_bases()
    here = unpack_here([DEBIAN, "localhost/coderl-test/none:missing"], str(tmp_path / "here"))
    assert len(here["images"][DEBIAN]["id"]) == 12 and "error" in here["images"]["localhost/coderl-test/none:missing"]
    assert list((tmp_path / "here" / "images").glob("*/rootfs/bin"))
    from tests.helpers.ray_cluster import sandbox_cluster

    with sandbox_cluster(1, 4):
        results = pull_on_nodes([DEBIAN], str(tmp_path / "nodes"))
    assert len(results) == 1 and results[0]["images"][DEBIAN]["id"] == here["images"][DEBIAN]["id"], results
    assert list((tmp_path / "nodes" / "images").glob("*/rootfs/bin"))
    done = subprocess.run([sys.executable, "-m", "coderl.cli", "images", "pull", DEBIAN, "--cache", str(tmp_path / "cli")],
                          capture_output=True, text=True, env=os.environ, timeout=600)
    assert done.returncode == 0 and json.loads(done.stdout)["images"][DEBIAN]["id"] == here["images"][DEBIAN]["id"]
