"""`coderl eval swe` (patch files, resume) and the service's /v1/swe/grade route through the real
client, both on the real sandbox over coderl's own task set."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from coderl.client import SandboxClient
from coderl.errors import BadRequest
from coderl.swe.task_set import build_task_set
from tests.helpers.poll import wait_for
from tests.helpers.service import running_service


@pytest.fixture(scope="module")
def task_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe")
    return root, build_task_set(root)


def _eval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coderl.cli", "eval", "swe", *args], capture_output=True, text=True,
                          env={**os.environ, "CODERL_NO_PROGRESS": "1"})


def test_eval_swe_on_a_patch_file_resumes(task_set, tmp_path):
    root, tasks = task_set
    patches = tmp_path / "preds.jsonl"
    patches.write_text(json.dumps({"instance_id": tasks[0].instance_id, "model_patch": tasks[0].gold_patch}) + "\n"
                       + json.dumps({"instance_id": tasks[1].instance_id, "model_patch": ""}) + "\n")
    out = tmp_path / "out"
    args = ["--tasks", str(root / "tasks.jsonl"), "--repos", str(root / "repos"), "--patches", str(patches),
            "--out", str(out), "--limit", "3"]
    first = _eval(*args)
    assert first.returncode == 0, first.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["statuses"] == {"resolved": 1, "unresolved": 1, "no_patch": 1}
    assert summary["resolved_rate"] == pytest.approx(1 / 3)
    lines = (out / "results.jsonl").read_text().splitlines()
    again = _eval(*args)
    assert again.returncode == 0 and (out / "results.jsonl").read_text().splitlines() == lines  # nothing redone
    bad = _eval("--tasks", str(root / "tasks.jsonl"), "--out", str(out), "--gold")
    assert bad.returncode == 2 and "--repos" in bad.stderr and "Traceback" not in bad.stderr


def test_grade_route_through_the_client(task_set, monkeypatch):
    root, tasks = task_set
    monkeypatch.setenv("CODERL_SWE_REPOS", str(root / "repos"))
    t = tasks[2]
    items = [{"task": t.to_row(), "patch": t.gold_patch}, {"task": t.to_row(), "patch": "garbage"},
             {"task": {"instance_id": "x"}, "patch": ""}]

    async def main(url):
        async with SandboxClient(url, timeout_s=600) as client:
            return await client.grade_swe(items)

    with running_service(slots=1) as url:
        gold, garbage, invalid = asyncio.run(main(url))
    assert (gold["status"], gold["reward"], gold["resolved"]) == ("resolved", 1.0, True)
    assert set(gold["fail_to_pass"].values()) == {"PASSED"}
    assert (garbage["status"], garbage["reward"]) == ("apply_failed", 0.0)
    assert "lacks" in invalid["error"]


def test_grade_route_without_repositories_is_a_400(monkeypatch):
    monkeypatch.delenv("CODERL_SWE_REPOS", raising=False)

    async def main(url):
        async with SandboxClient(url) as client:
            return await client.grade_swe([{"task": {"instance_id": "x"}, "patch": ""}])

    with running_service(slots=1) as url, pytest.raises(BadRequest, match="CODERL_SWE_REPOS"):
        asyncio.run(main(url))


HARNESS = '''import json, os, subprocess, urllib.request
task = open(os.environ["CODERL_TASK_FILE"]).read()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": os.environ["CODERL_MODEL"], "messages": [{"role": "user", "content": task}]}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
answer = json.loads(urllib.request.urlopen(req, timeout=120).read())["choices"][0]["message"]["content"]
open("/tmp/answer.diff", "w").write(answer.strip() + "\\n")
subprocess.run(["git", "apply", "/tmp/answer.diff"], check=True)
'''


def test_eval_swe_with_a_harness_through_the_gateway(task_set, tmp_path):
    """A served "model" (the gateway's replay backend answering with the task's fix as a diff) and a
    minimal harness (asks the model, applies its answer) in a session sandbox whose one way out is
    the gateway's unix socket; the episode's diff is captured and graded: resolved."""
    from coderl.data.qwen_tokenizer import build_qwen_tokenizer

    root, tasks = task_set
    (tmp_path / "harness.py").write_text(HARNESS)
    (tmp_path / "replay.jsonl").write_text(json.dumps({"text": tasks[0].gold_patch}) + "\n")
    sock = tmp_path / "gw.sock"
    gateway = subprocess.Popen([sys.executable, "-m", "coderl.cli", "gateway", "--tokenizer", build_qwen_tokenizer(),
                                "--backend", "replay", "--replay", str(tmp_path / "replay.jsonl"), "--listen",
                                f"unix:{sock}", "--auto-session"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        # the socket file appears at bind(), before listen(): wait until a connection is accepted
        wait_for(lambda: _connects(sock, gateway), timeout_s=180, ignore=(OSError,),
                 what=f"the gateway accepting connections on {sock}")
        out = tmp_path / "out"
        run = _eval("--tasks", str(root / "tasks.jsonl"), "--repos", str(root / "repos"), "--limit", "1",
                    "--harness", f"python3 {tmp_path / 'harness.py'}", "--harness-bind", str(tmp_path / "harness.py"),
                    "--gateway-socket", str(sock), "--out", str(out))
        assert run.returncode == 0, run.stderr
        (record,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        assert (record["status"], record["agent_exit_code"]) == ("resolved", 0), record
        added = [line for line in tasks[0].gold_patch.splitlines() if line.startswith("+") and line[1:2] != "+"]
        assert added and all(line in record["patch"].splitlines() for line in added), record["patch"]
    finally:
        os.killpg(gateway.pid, 15)
        gateway.wait(30)


def _connects(sock: Path, gateway: subprocess.Popen) -> bool:
    """One connection to the gateway's socket (OSError while it is not listening yet); fails at
    once, with the gateway's last words, if it exited."""
    if gateway.poll() is not None:
        raise AssertionError(f"the gateway exited {gateway.returncode}: {gateway.stderr.read()[-2000:]!r}")
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(str(sock))
    return True
