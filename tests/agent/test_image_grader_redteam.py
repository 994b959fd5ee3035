"""The red-team suite again, against the IMAGE grader (`coderl.swe.image_grader.ImageRepoGrader`): every
attack of tests/agent/test_grader_redteam.py on the same ``calc`` repository, here at /testbed of a
SWE-bench-shaped image built with podman (the image's own Python 3.11 and pytest 7.2.1, the repository
importable through a .pth, as SWE-bench's images have it). The image grader shares the launcher and
the verdicts with the repository grader but takes the diff's base, the protected files, the pinned
configuration and the test patch from the pristine image instead of a snapshot: each attack must
come out not resolved, reward 0, with the status it has there."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil

import pytest
from tests.agent.test_grader_redteam import (
    ATTACKS,
    EXTRA,
    SUB,
    Attack,
    assert_attack_fails,
    assert_golds_resolve,
    calc_task,
    make_diff,
)
from tests.helpers.images import built_image, flask_wheels, swe_dockerfile

from coderl.sandbox.session import SessionHost
from coderl.swe.image_grader import ImageRepoGrader
from coderl.swe.store import RepoStore

# slow: one image FROM the local Python base (seconds once the bases exist: CI builds them for
# tests/docker) and 67 gradings, three sandboxes at a time
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def redteam(tmp_path_factory):
    root = tmp_path_factory.mktemp("redteam")
    task = calc_task(root)
    snapshot = RepoStore(root / "repos", root / "cache").snapshot(task.repo, task.base_commit)
    context = root / "image"
    shutil.copytree(snapshot, context / "testbed", ignore=shutil.ignore_patterns(".git"))
    shutil.copytree(flask_wheels(), context / "wheels")
    image = built_image("redteam-calc", context, swe_dockerfile("/testbed"))
    test_patch = make_diff(snapshot, root / "scratch", Attack("test patch", {"tests/test_extra.py": (
        "from calc import add\n\n\ndef test_add_more():\n    assert add(10, 5) == 15\n")}, ""))
    tasks = {"calc": task, "calc-tp": dataclasses.replace(task, instance_id="redteam__calc-2", test_patch=test_patch,
                                                           fail_to_pass=(EXTRA,), pass_to_pass=(SUB,))}
    items = [*((t, t.gold_patch) for t in tasks.values()),
             *((tasks[a.task], make_diff(snapshot, root / "scratch", a)) for a in ATTACKS)]

    async def main():
        async with SessionHost() as host:
            grader = ImageRepoGrader(host, root / "images", concurrency=3)
            return await asyncio.gather(*(grader.grade(t, image, diff) for t, diff in items))

    results = asyncio.run(main())
    return results[:2], dict(zip((a.id for a in ATTACKS), results[2:], strict=True))


def test_calc_gold_resolves_in_the_image(redteam):
    assert_golds_resolve(redteam[0])


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.id for a in ATTACKS])
def test_attack_is_not_resolved_in_the_image(redteam, attack):
    assert_attack_fails(redteam[1][attack.id], attack)
