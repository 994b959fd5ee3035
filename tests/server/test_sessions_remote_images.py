"""Image-backed tasks on the session service (`coderl serve` on 127.0.0.1, `coderl.server.image_tasks`):
a real SWE-bench Lite instance (pallets__flask-4992) in the SWE-bench-shaped image the image-grader
tests build here with podman, and the hello-shell Harbor task. The image is unpacked from the
SERVICE's cache; the client names it. Shown: a remote session in the image (its work dir and
Python, the relay), the verl agent loop's episode over remote sessions in the image (a scripted
model driving the scripted harness, which runs on the image's own python3) graded resolved by the
service, `/v1/swe/grade` of the image row (gold resolves, no change does not), a Harbor task by
name (oracle 1, empty 0), and a node lacking the image: 409 `ImageNotPulled` / ``sandbox_error``
naming `coderl images pull`, never a pull at request time."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from unittest import mock

import pytest

from coderl.client import SandboxClient, SessionService
from coderl.data.swe import image_row
from coderl.errors import BadRequest, ImageNotPulled
from coderl.sandbox.session import SessionLimits
from coderl.swe.harness import run_in_remote_sandbox
from coderl.swe.task import RepoTask
from coderl.swe.task_ref import ImageRef, TaskRef
from tests.helpers.images import DEBIAN, ROOT, swe_bench_image, swe_lite_task
from tests.helpers.poll import wait_for_async
from tests.helpers.service import running_service
from tests.swe.test_image_repo_tasks import FIX, INSTANCE, SHORT_TASK
from tests.verl.test_agent_loop import HERE, ScriptedServer, char_ids, config

# slow: the flask image (built by tests/swe/test_image_repo_tasks.py too: the same tag, built once)
# and the hello-shell Harbor image (tests/swe/test_harbor_tasks.py's); each grade of flask-4992 runs pytest
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
HARBOR = ROOT / "tests" / "fixtures" / "harbor"
LIMITS = SessionLimits(episode_s=300, exec_s=120, memory_mb=1024, max_processes=128, output_kb=256, disk_mb=256)
ABSENT = "localhost/coderl-test/absent:0"


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> str:
    return swe_bench_image(INSTANCE, tmp_path_factory.mktemp("ctx"))


@pytest.fixture(scope="module")
def row() -> dict:
    return swe_lite_task(INSTANCE).to_row()


@pytest.fixture(scope="module")
def service(tmp_path_factory, image):
    """The service with its own cache, the Harbor tasks it serves and the scripted harness bound in;
    the hello-shell image pre-pulled into that cache with `coderl images pull TASK_DIR` (the flask
    image is only in the engine: the service unpacks it on first use, from local storage). Its warm
    pool keeps one sandbox per task asked for (image tasks too)."""
    cache = tmp_path_factory.mktemp("cache")
    env = {"CODERL_CACHE": str(cache), "CODERL_HARBOR_TASKS": str(HARBOR), "CODERL_SESSION_BINDS": str(HERE),
           "CODERL_SESSION_DIR": str(tmp_path_factory.mktemp("sessions")), "CODERL_SESSION_POOL": "1"}
    pulled = subprocess.run([sys.executable, "-m", "coderl.cli", "images", "pull", str(HARBOR / "hello-shell")],
                            capture_output=True, text=True, env={**os.environ, **env}, timeout=1200)
    assert pulled.returncode == 0 and '"id"' in pulled.stdout, pulled.stdout + pulled.stderr[-2000:]
    with mock.patch.dict(os.environ, env), running_service(slots=1) as url:
        yield url


def test_session_in_the_image_and_its_grade(service, image, row):
    """A remote session in the flask image: /testbed, the image's Python with flask; FIX run there, then
    the session's grade (a fresh sandbox from the pristine image, on the node): resolved."""
    async def main():
        async with SessionService(service, timeout_s=600) as sessions:
            s = await sessions.open(row, image={"reference": image}, limits=LIMITS)
            try:
                assert s.workdir == "/testbed"
                r = await s.exec("pwd; python3 -c 'import flask, pytest; print(flask.__file__)'")
                assert r.stdout.split("\n")[:2] == ["/testbed", "/testbed/src/flask/__init__.py"], r
                assert "text: bool" in (await s.exec(FIX)).stdout
                return await s.grade()
            finally:
                await s.close()

    graded = asyncio.run(main())
    assert graded["status"] == "resolved" and graded["reward"] == 1.0, graded
    assert "src/flask/config.py" in graded["diff"]


def test_an_image_task_is_handed_out_warm_and_fresh(service, image, row):
    """The image task from the node's warm pool: the first episode handed out writes into /testbed,
    /tmp and the image's /usr, starts a process and kills what it can; the next one handed out
    (warm again) sees none of it, with its own environment."""
    img = {"reference": image}

    async def main():
        async with SessionService(service, timeout_s=600) as sessions:
            await sessions.warm(row, image=img, limits=LIMITS)
            ready = lambda st: st["pool"]["ready"] >= 1  # noqa: E731
            await wait_for_async(sessions.stats, ready, what="a warm image sandbox", timeout_s=600)
            first = await sessions.open(row, image=img, limits=LIMITS, env={"MARK": "one"})
            assert first.warm
            mess = await first.exec("echo planted > /testbed/planted; echo planted > /tmp/planted; "
                                    "echo '# planted' >> src/flask/config.py; echo planted > /usr/local/planted; "
                                    "(exec -a zzsleeper sleep 300 &); kill -9 -1; echo $MARK")
            assert mess.stdout.strip() in ("one", ""), mess
            await first.close()
            await wait_for_async(sessions.stats, ready, what="the pool refilled", timeout_s=600)
            second = await sessions.open(row, image=img, limits=LIMITS, env={"MARK": "two"})
            try:
                assert second.warm
                return (await second.exec("echo $MARK; pwd; ls /testbed/planted /tmp/planted /usr/local/planted "
                                          "2>&1 | grep -c 'No such file'; git status --porcelain; "
                                          "grep -c planted src/flask/config.py; "
                                          "grep -l '[z]zsleeper' /proc/[0-9]*/cmdline | wc -l")).stdout
            finally:
                await second.close()

    assert asyncio.run(main()).split("\n") == ["two", "/testbed", "3", "0", "0", ""]


def test_grade_route_gold_resolves_and_empty_does_not(service, image, row):
    async def main():
        async with SandboxClient(service, timeout_s=1200) as client:
            gold_patch = RepoTask.from_row(row).gold_patch
            return await client.grade_swe([{"task": row, "image": {"reference": image}, "patch": gold_patch},
                                           {"task": row, "image": {"reference": image}, "patch": ""},
                                           {"task": row, "image": {"reference": image, "user": "nobody"},
                                            "patch": gold_patch},  # the row's user: graded as that user
                                           {"task": row, "image": {"reference": image, "user": "agent"},
                                            "patch": gold_patch}])

    gold, empty, as_nobody, no_user = asyncio.run(main())
    assert (as_nobody["status"], as_nobody["reward"]) == ("resolved", 1.0), as_nobody
    assert no_user["status"] == "sandbox_error" and "user 'agent' is not in its /etc/passwd" in no_user["message"], no_user
    assert (gold["status"], gold["reward"]) == ("resolved", 1.0), gold
    assert len(gold["pass_to_pass"]) == 18 and set(gold["pass_to_pass"].values()) == {"PASSED"}, gold
    assert (empty["status"], empty["reward"]) == ("unresolved", 0.0), empty
    assert empty["fail_to_pass"] == {"tests/test_config.py::test_config_from_file_toml": "FAILED"}, empty


def test_harbor_task_by_name(service):
    """hello-shell by its name on the node: the agent's session (/app), the oracle's command there,
    graded by the task's verifier (1) in the container the session left (a session that also
    replaced the verifier's `cat`: tampered); no change graded over /v1/swe/grade (0)."""
    async def main():
        async with SessionService(service, timeout_s=600) as sessions:
            s = await sessions.open(harbor={"task": "hello-shell"}, limits=LIMITS)
            forged = await sessions.open(harbor={"task": "hello-shell"}, limits=LIMITS)
            try:
                r = await s.exec("pwd; ls /tests 2>&1; echo 'Hello, world!' > hello.txt")
                assert s.workdir == "/app" and r.stdout.startswith("/app\n") and "No such file" in r.stdout, r
                solved = await s.grade()
                await forged.exec("echo 'Hello, world!' > hello.txt && printf '#!/bin/sh\\necho ok\\n' > /usr/bin/cat")
                tampered = await forged.grade()
            finally:
                await s.close()
                await forged.close()
        async with SandboxClient(service, timeout_s=600) as client:
            (empty,) = await client.grade_swe([{"harbor": {"task": "hello-shell"}, "patch": ""}])
        return solved, tampered, empty

    solved, tampered, empty = asyncio.run(main())
    assert (solved["status"], solved["reward"], solved["instance_id"]) == ("resolved", 1.0, "hello-shell"), solved
    assert (tampered["status"], tampered["reward"]) == ("tampered", 0.0), tampered
    assert "the image's /usr/bin/cat was changed" in tampered["findings"], tampered
    assert (empty["status"], empty["reward"]) == ("unresolved", 0.0), empty


def test_an_image_the_node_lacks_is_named_not_pulled(service, row):
    async def main():
        async with SessionService(service) as sessions:
            with pytest.raises(ImageNotPulled, match="coderl images pull localhost/coderl-test/absent:0"):
                await sessions.open(row, image={"reference": ABSENT}, limits=LIMITS)
            with pytest.raises(BadRequest, match="no Harbor task 'absent'"):
                await sessions.open(harbor={"task": "absent"}, limits=LIMITS)
        async with SandboxClient(service) as client:
            return await client.grade_swe([{"task": row, "image": {"reference": ABSENT}, "patch": ""},
                                           {"image": {"reference": ABSENT}, "patch": ""}])

    missing, no_task = asyncio.run(main())
    assert missing["status"] == "sandbox_error" and missing["reward"] is None, missing
    assert "coderl images pull" in missing["message"], missing
    assert "send its row as 'task'" in no_task["error"], no_task



def test_a_row_whose_image_is_a_dockerfile_is_prebuilt_on_the_node(service, row, tmp_path):
    """A row whose image names a Dockerfile (FROM the local base, COPY only; a file of its own makes a tag
    this machine has never built): the agent loop sends its tag, which the node lacks: 409 naming the
    pre-build command; `coderl images pull DOCKERFILE` (into the node's cache, as an operator runs it)
    builds and unpacks it; then a session in it as the row's user in the image's work dir; a user the
    image lacks: 400 naming it."""
    ctx = tmp_path / "ctx"
    (ctx / "work").mkdir(parents=True)
    (ctx / "work" / "nonce.txt").write_text(f"{uuid.uuid4().hex}\n")
    (ctx / "Dockerfile").write_text(f"FROM {DEBIAN}\nCOPY work /work\nWORKDIR /work\n")
    ref = TaskRef.of_repo_task(RepoTask.from_row(row), image=ImageRef(str(ctx / "Dockerfile"), user="nobody"))
    image = ref.to_request()["image"]
    assert image["reference"].startswith("localhost/coderl-build/ctx:"), image

    async def open_as(user: str) -> str:
        async with SessionService(service) as sessions:
            s = await sessions.open(row, image={**image, "user": user}, limits=LIMITS)
            try:
                return (await s.exec("id -un; pwd; cat nonce.txt")).stdout
            finally:
                await s.close()

    with pytest.raises(ImageNotPulled, match=r"built from a row's Dockerfile.*coderl images pull DOCKERFILE"):
        asyncio.run(open_as("nobody"))
    try:
        pulled = subprocess.run([sys.executable, "-m", "coderl.cli", "images", "pull", str(ctx / "Dockerfile")],
                                capture_output=True, text=True, env=os.environ, timeout=600)  # the node's CODERL_CACHE
        assert pulled.returncode == 0 and '"id"' in pulled.stdout, pulled.stdout + pulled.stderr[-2000:]
        assert asyncio.run(open_as("nobody")).split("\n")[:3] == ["nobody", "/work", (ctx / "work" / "nonce.txt").read_text().strip()]
        with pytest.raises(BadRequest, match="user 'agent' is not in its /etc/passwd"):
            asyncio.run(open_as("agent"))
    finally:
        subprocess.run(["podman", "image", "rm", "-f", image["reference"]], capture_output=True, timeout=120)


@pytest.mark.verl
def test_agent_loop_episode_in_the_image_over_remote_sessions(service, image, row, tokenizer, tmp_path):
    """verl's `GatewayAgentLoop` with ``sessions_url`` on a `coderl data swe --image` row: the
    scripted harness (run by the image's python3, bound in by the node) reaches the loop's gateway
    through the node's relay, its model's one tool call applies FIX; the service grades the diff
    from the pristine image: resolved, reward 1."""
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from coderl.verl.agent_loop import GatewayAgentLoop
    from tests.helpers.qwen_tokenizer import build_tiny_model

    call = json.dumps({"name": "bash", "arguments": {"cmd": FIX}})
    server = ScriptedServer(tokenizer, [char_ids(tokenizer, f"Fixing.\n<tool_call>\n{call}\n</tool_call>"),
                                        char_ids(tokenizer, "Fixed.")])
    command = f"python3 {HERE / 'scripted_agent.py'}"
    cfg = config(build_tiny_model(), tmp_path, "sandbox", command, [])
    extra_info = image_row(RepoTask.from_row(row), image, "python3", "/testbed", tmp_path / "cache")["extra_info"]

    async def main():
        loop = GatewayAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer,
                                processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data),
                                hf_model_type="qwen2", tools=ToolListWrap([]), command=command, timeout_s=300,
                                score="repo", sessions_url=service)
        return await loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": SHORT_TASK}],
                              data_source="coderl/swe", reward_model={"ground_truth": INSTANCE},
                              extra_info=extra_info)

    out = asyncio.run(main())
    assert out.extra_fields["sandbox_error"] == 0, out.extra_fields
    assert "text: bool" in tokenizer.decode(out.response_ids)  # the tool ran in the image, its output recorded
    assert out.extra_fields["grade_status"] == "resolved" and out.reward_score == 1.0, out.extra_fields


def test_run_in_remote_sandbox_renders_the_image_workdir(service, image, row):
    """The harness template's {workdir} is the node's answer (the image's /testbed), not /repo."""
    async def main():
        async with SessionService(service) as sessions:
            return await run_in_remote_sandbox("cd {workdir} && pwd", sessions=sessions,
                                               task_row=row, image={"reference": image}, task="t",
                                               gateway_url="http://127.0.0.1:9", session_id=f"ep-{uuid.uuid4().hex}",
                                               model="m", timeout_s=60, capture_diff=True)

    result = asyncio.run(main())
    assert result.exit_code == 0 and result.output_tail.startswith("/testbed\n"), result
    assert result.diff == "", result


def test_eval_swe_on_images_here_and_on_the_service(service, image, row, tmp_path):
    """`coderl eval swe --image TEMPLATE`: no mirror; --gold graded here from the image (1 of 1), an
    empty prediction graded by the service over /v1/swe/grade (0 of 1)."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(row) + "\n")
    template = image.rsplit(":", 1)[0].replace("pallets_1776_flask-4992", "{sweb_id}") + ":" + image.rsplit(":", 1)[1]
    argv = [sys.executable, "-m", "coderl.cli", "eval", "swe", "--tasks", str(tasks), "--image", template,
            "--cache", str(tmp_path / "cache")]
    gold = subprocess.run([*argv, "--gold", "--out", str(tmp_path / "gold")], capture_output=True, text=True,
                          timeout=900)
    assert gold.returncode == 0, gold.stderr[-2000:]
    (tmp_path / "empty.jsonl").write_text(json.dumps({"instance_id": INSTANCE, "model_patch": ""}) + "\n")
    empty = subprocess.run([*argv, "--patches", str(tmp_path / "empty.jsonl"), "--sandbox-url", service, "--out",
                            str(tmp_path / "empty")], capture_output=True, text=True, timeout=900)
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("gold", "empty")]
    assert [(s["resolved"], s["tasks"], s["sandbox_errors"]) for s in summaries] == [(1, 1, 0), (0, 1, 0)], (
        summaries, empty.stderr[-2000:])
