"""One table over task kind (snapshot, image, Harbor) x placement (local: this process's session host;
remote: the real session service on 127.0.0.1, through coderl/client.py), all through the one
interface (`coderl.swe.episodes`): a harness that fixes the task runs in an episode
(``run_harness``), its diff is graded and so is no change (``grade``), and every cell answers the
same `GradeResult` fields: ``resolved`` with reward 1 for the fix, ``unresolved`` with 0 for no
change, under the reference's instance id.

Snapshot rows: default tier (coderl's own task set; a service start and four grades, about 30 s on
a loaded 2-vCPU machine). Image and Harbor rows: slow (the flask image that
tests/swe/test_image_repo_tasks.py builds, the same tag, built once; the hello-shell Harbor task's
image, pre-pulled into the cache as `coderl images pull TASK_DIR` does on a node).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from unittest import mock

import pytest

from coderl.client import SandboxClient, SessionService
from coderl.sandbox.session import SessionHost
from coderl.swe.episodes import LocalEpisodes, RemoteEpisodes
from coderl.swe.grade_status import GradeResult
from coderl.swe.harbor import HarborTask
from coderl.swe.task_ref import EMPTY, TaskRef
from coderl.swe.task_set import build_task_set
from tests.helpers.images import ROOT
from tests.helpers.service import running_service

HARBOR = ROOT / "tests" / "fixtures" / "harbor"
FIELDS = {f.name for f in dataclasses.fields(GradeResult)} | {"resolved"}
SLOW = pytest.mark.slow


@pytest.fixture(scope="module")
def task_set(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("swe")
    return root, {t.instance_id: t for t in build_task_set(root)}


@pytest.fixture(scope="module")
def service(task_set, tmp_path_factory):
    """The session service with the task set's repositories and the Harbor fixtures (this process's
    cache: what the local rows build or pull, the node finds)."""
    root, _ = task_set
    env = {"CODERL_SWE_REPOS": str(root / "repos"), "CODERL_HARBOR_TASKS": str(HARBOR),
           "CODERL_SESSION_DIR": str(tmp_path_factory.mktemp("sessions"))}
    with mock.patch.dict(os.environ, env), running_service(slots=1) as url:
        yield url


@pytest.fixture(scope="module")
def gateway_socket(tmp_path_factory):
    """A listening unix socket for the episodes' relay (the fixing harnesses never call a model)."""
    path = tmp_path_factory.mktemp("gw") / "gateway.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    path.parent.chmod(0o755)
    path.chmod(0o777)
    yield str(path)
    listener.close()


def _snapshot(request) -> tuple[TaskRef, str]:
    root, tasks = request.getfixturevalue("task_set")
    task = next(t for t in tasks.values() if "lru" in t.instance_id)
    patch = task.gold_patch if task.gold_patch.endswith("\n") else task.gold_patch + "\n"
    return TaskRef.of_repo_task(task, repos_dir=root / "repos"), f"patch -p1 --batch -s <<'CODERL_EOF'\n{patch}CODERL_EOF"


def _image(request) -> tuple[TaskRef, str]:
    from coderl.swe.task_ref import ImageRef
    from tests.helpers.images import swe_bench_image, swe_lite_task
    from tests.swe.test_image_repo_tasks import FIX, INSTANCE

    reference = swe_bench_image(INSTANCE, request.getfixturevalue("tmp_path_factory").mktemp("ctx"))
    return TaskRef.of_repo_task(swe_lite_task(INSTANCE), image=ImageRef(reference)), FIX


def _harbor(request) -> tuple[TaskRef, str]:
    pulled = subprocess.run([sys.executable, "-m", "coderl.cli", "images", "pull", str(HARBOR / "hello-shell")],
                            capture_output=True, text=True, timeout=1200)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr[-2000:]
    return TaskRef.of_harbor(HarborTask.from_dir(HARBOR / "hello-shell")), "echo 'Hello, world!' > hello.txt"


KINDS = {"snapshot": _snapshot, "image": _image, "harbor": _harbor}


async def _cell(episodes, ref: TaskRef, fix: str):
    try:
        ran = await episodes.run_harness(ref, fix.replace("{", "{{").replace("}", "}}"), task="fix it",
                                         session_id=f"kinds-{uuid.uuid4().hex}", model="none", timeout_s=300.0)
        fixed = await episodes.grade(ref, ran.diff, ran.state)
        nothing = await episodes.grade(ref, "")
        return ran, fixed, nothing
    finally:
        await episodes.aclose()


@pytest.mark.parametrize("placement", ["local", "remote"])
@pytest.mark.parametrize("kind", [pytest.param("snapshot"), pytest.param("image", marks=SLOW),
                                  pytest.param("harbor", marks=SLOW)])
def test_every_kind_in_every_placement_answers_the_same_fields(kind, placement, request):
    ref, fix = KINDS[kind](request)

    async def main():
        if placement == "local":
            async with SessionHost() as host:
                return await _cell(LocalEpisodes(host, gateway_socket=request.getfixturevalue("gateway_socket")),
                                   ref, fix)
        url = request.getfixturevalue("service")
        episodes = RemoteEpisodes(SessionService(url, timeout_s=600), SandboxClient(url, timeout_s=1200),
                                  gateway_url="http://127.0.0.1:9")  # the fixes never call the model
        return await _cell(episodes, ref, fix)

    ran, fixed, nothing = asyncio.run(main())
    assert ran.exit_code == 0 and ran.diff, ran.output_tail
    for graded, status, reward in ((fixed, "resolved", 1.0), (nothing, "unresolved", 0.0)):
        assert isinstance(graded, GradeResult) and set(graded.to_dict()) == FIELDS
        assert (graded.status, graded.reward, graded.instance_id) == (status, reward, ref.instance_id), graded
        assert GradeResult.from_dict(graded.to_dict()) == graded  # the wire form reads back whole


def test_a_row_without_a_task_is_the_datas_sandbox_error_in_either_placement(request):
    ref = TaskRef.from_extra_info({"instance_id": "code-1"})
    assert ref.kind == EMPTY and ref.to_request() == {}

    async def main():
        async with SessionHost() as host:
            local = await LocalEpisodes(host).grade(ref, "diff")
        remote = await RemoteEpisodes(None, None).grade(ref, "diff")
        return local, remote

    for graded in asyncio.run(main()):
        assert (graded.status, graded.reward, graded.instance_id) == ("sandbox_error", None, "code-1")
