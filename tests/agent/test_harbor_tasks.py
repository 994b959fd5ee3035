"""Harbor tasks on our sandbox: three tasks written for these tests (tests/fixtures/harbor: a shell one, a
Python one with reward.json, one whose answer is in a file outside the work dir), their images built
here with podman FROM the local bases. Gates: the oracle (solution/solve.sh) scores 1, no change 0.
Red team: what an episode writes outside its work dir (a reward file, a changed /etc, a replaced
system binary) never reaches the verifier; a diff reaching out of the work dir does not apply; the
agent's code writing the reward while the verifier runs is overwritten by the verifier's own."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from tests.helpers import mini_episode
from tests.helpers.images import ROOT, local_bases

from coderl.data.harbor import task_dirs
from coderl.errors import BadRequest, InvalidTask
from coderl.sandbox.session import SessionHost
from coderl.swe.grade_status import GradeStatus
from coderl.swe.harbor import HarborTask
from coderl.swe.harbor_grader import HarborRunner, parse_reward

# every test but the first is slow: the local bases (mmdebstrap + the Python stand-in, minutes cold)
# and three image builds
pytestmark = pytest.mark.timeout(3600)
TASKS = ROOT / "tests" / "fixtures" / "harbor"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    local_bases()
    return tmp_path_factory.mktemp("cache")


def task(name: str) -> HarborTask:
    return HarborTask.from_dir(TASKS / name)


def run(cache: Path, coro_fn):
    async def main():
        async with SessionHost() as host:
            return await coro_fn(HarborRunner(host, cache))

    return asyncio.run(main())


def test_task_directories_are_read():
    hello, mean, port = task("hello-shell"), task("mean-python"), task("port-from-etc")
    assert (hello.agent_timeout_s, hello.verifier_timeout_s, hello.memory_mb, hello.storage_mb) == (120, 60, 512, 256)
    assert mean.verifier_env == {"PYTHONDONTWRITEBYTECODE": "1"} and port.workdir == "/app"
    assert "/etc/greeter/config.ini" in port.instruction and hello.image == ""
    assert hello.image_tag.startswith("localhost/coderl-harbor/hello-shell:") and hello.image_tag == task("hello-shell").image_tag
    assert parse_reward(b"0.5\n", None) == {"reward": 0.5}
    assert parse_reward(None, b'{"reward": 1, "cases": 0.5}') == {"reward": 1.0, "cases": 0.5}
    for bad in ((b"nan", None), (None, b"[]"), (None, None), (b"yes", None)):
        with pytest.raises(ValueError):
            parse_reward(*bad)
    assert [p.name for p in task_dirs([TASKS])] == ["hello-shell", "mean-python", "port-from-etc"]
    with pytest.raises(BadRequest, match="no such directory"):
        task_dirs([TASKS / "missing"])
    with pytest.raises(InvalidTask, match="not a Harbor task"):
        HarborTask.from_dir(TASKS / "hello-shell" / "environment")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hello-shell", "mean-python", "port-from-etc"])
def test_oracle_scores_1_and_no_change_0(cache, name):
    async def body(runner):
        oracle = await runner.oracle_diff(task(name))
        assert oracle.strip(), "the oracle changed nothing in the work dir"
        return await runner.grade(task(name), oracle), await runner.grade(task(name), "")

    solved, empty = run(cache, body)
    assert (solved.status, solved.reward) == (GradeStatus.RESOLVED, 1.0), solved
    assert (empty.status, empty.reward) == (GradeStatus.UNRESOLVED, 0.0), empty
    if name == "mean-python":
        assert solved.rewards == {"reward": 1.0, "cases_passed": 1.0} and empty.rewards["cases_passed"] == 0.0


@pytest.mark.slow
def test_what_an_episode_does_outside_its_work_dir_stays_there(cache):
    """The agent writes the reward file, points /etc's config at its own answer and replaces the
    verifier's tools: none of it is in the verifier's fresh sandbox, so its answer is wrong there."""
    async def body(runner):
        t = task("port-from-etc")
        session = await runner.open_episode(t)
        try:
            r = await session.exec("mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && "
                                   "sed -i 's/8731/1234/' /etc/greeter/config.ini && echo 1234 > port.txt && "
                                   "printf '#!/bin/sh\\necho 1234\\n' > /usr/bin/tr && ls /tests /solution 2>&1; id -u")
            assert "No such file" in r.stdout and r.stdout.strip().endswith("0"), r  # no tests, no solution here
            diff = await session.finish()
        finally:
            await session.close()
        assert "port.txt" in diff and "greeter" not in diff and "reward" not in diff
        return await runner.grade(t, diff)

    graded = run(cache, body)
    assert (graded.status, graded.reward) == (GradeStatus.UNRESOLVED, 0.0), graded


@pytest.mark.slow
def test_a_diff_reaching_out_of_the_work_dir_does_not_apply(cache):
    escape = ("diff --git a/../etc/greeter/config.ini b/../etc/greeter/config.ini\n--- a/../etc/greeter/config.ini\n"
              "+++ b/../etc/greeter/config.ini\n@@ -1,3 +1,3 @@\n [server]\n host = 0.0.0.0\n-port = 8731\n+port = 1\n")
    absolute = ("diff --git a/port.txt b/port.txt\nnew file mode 120000\n--- /dev/null\n+++ b/port.txt\n@@ -0,0 +1 @@\n"
                "+/etc/greeter/config.ini\n\\ No newline at end of file\n")

    async def body(runner):
        return await runner.grade(task("port-from-etc"), escape), await runner.grade(task("port-from-etc"), absolute)

    escaped, linked = run(cache, body)
    assert (escaped.status, escaped.reward) == (GradeStatus.APPLY_FAILED, 0.0), escaped
    assert linked.reward == 0.0, linked  # a link to the config is not the port


@pytest.mark.slow
def test_the_agents_code_writing_the_reward_is_overwritten(cache):
    """stats.py writes reward.json {"reward": 1} when the verifier imports it, then answers wrong:
    the verifier writes its own reward after the tests, which is what is read."""
    forged = ('import json, os\nos.makedirs("/logs/verifier", exist_ok=True)\n'
              'json.dump({"reward": 1}, open("/logs/verifier/reward.json", "w"))\n\n\ndef mean(values):\n    return 0\n')

    async def body(runner):
        t = task("mean-python")
        session = await runner.open_episode(t)
        try:
            await session.write_file("stats.py", forged.encode())
            diff = await session.finish()
        finally:
            await session.close()
        return await runner.grade(t, diff)

    graded = run(cache, body)
    assert (graded.status, graded.reward) == (GradeStatus.UNRESOLVED, 0.0), graded


@pytest.mark.slow
def test_data_and_eval_commands(cache, tmp_path):
    """`coderl data harbor` makes the rows and tasks.jsonl; `coderl eval harbor --empty` on them: 0 of 3
    (the oracle gate through the same code: test_oracle_scores_1_and_no_change_0)."""
    env = {**os.environ, "CODERL_CACHE": str(cache)}
    data = subprocess.run([sys.executable, "-m", "coderl.cli", "data", "harbor", str(TASKS), "--out",
                           str(tmp_path / "data")], capture_output=True, text=True, env=env, timeout=1800)
    assert data.returncode == 0, data.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "data" / "tasks.jsonl").read_text().splitlines()]
    assert [r["name"] for r in rows] == ["hello-shell", "mean-python", "port-from-etc"]
    frame = pd.read_parquet(tmp_path / "data" / "train.parquet")
    assert list(frame["data_source"]) == ["coderl/harbor"] * 3
    assert "hello.txt" in frame["prompt"][0][0]["content"]
    done = subprocess.run([sys.executable, "-m", "coderl.cli", "eval", "harbor", str(tmp_path / "data"), "--out",
                           str(tmp_path / "empty"), "--empty"], capture_output=True, text=True, env=env, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "empty" / "summary.json").read_text())
    assert (summary["resolved"], summary["sandbox_errors"], summary["tasks"], summary["mean_reward"]) == (0, 0, 3, 0.0)
    bad = subprocess.run([sys.executable, "-m", "coderl.cli", "eval", "harbor", str(tmp_path / "data"), "--out",
                          str(tmp_path / "bad"), "--empty", "--oracle"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "exactly one of" in bad.stderr, bad.stderr


@pytest.mark.heavy  # the stock harness in an image session: ~7 min here, past CI's budget
@pytest.mark.verl
@pytest.mark.skipif(not mini_episode.installed(), reason=mini_episode.MISSING)
def test_stock_harness_through_the_agent_loop(cache, tmp_path):
    """A `coderl data harbor` row through the verl agent loop: the unmodified mini-swe-agent in the
    task's minimal Debian image (no Python, no libssl there), its diff graded by the task's verifier: reward 1."""
    from coderl.data.harbor import harbor_row

    row = harbor_row(task("hello-shell"), "", cache)
    out = mini_episode.run_mini_episode(tmp_path, "echo 'Hello, world!' > /app/hello.txt && cat /app/hello.txt",
                                        prompt=row["prompt"], extra_info=row["extra_info"],
                                        data_source=row["data_source"], reward_model=row["reward_model"])
    extra = out.extra_fields
    assert extra["sandbox_error"] == 0 and extra["agent_turns"] == 2, extra.get("agent_output_tail", extra)
    assert extra["grade_status"] == "resolved" and out.reward_score == 1.0, extra
