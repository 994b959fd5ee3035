"""`coderl eval swe` (patch files, resume) and the service's /v1/swe/grade route through the real
client, both on the real sandbox over coderl's own task set."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from tests.helpers.service import running_service

from coderl.agent.task_set import build_task_set
from coderl.client import SandboxClient
from coderl.errors import BadRequest


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
