"""Harbor tasks on our sandbox: tasks written for these tests, their images built here with podman FROM
the local bases. tests/fixtures/harbor: a shell one, a Python one with reward.json, one whose answer
is in a file outside the work dir; tests/fixtures/harbor-terminal: four terminal-style tasks on ONE
image (install from the image's offline package cache, edit /etc, repair a repository under /root,
start and check a local service), graded as Harbor grades them, in the container the episode left.
Gates: the oracle (solution/solve.sh) scores 1, no change 0. Red team: a verifier that did not
finish (test.sh killed by the agent's module, a daemon rewriting the reward after test.sh) gives no
reward; a replaced verifier tool, loader configuration, Python start-up hook or a link on a mount
point is tampering; a diff reaching out of the work dir does not apply; the agent's code writing
the reward while the verifier runs is overwritten by the verifier's own."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from coderl.data.harbor import task_dirs
from coderl.errors import BadRequest, InvalidTask
from coderl.sandbox.session import SessionHost
from coderl.swe.grade_status import GradeStatus
from coderl.swe.harbor import HarborTask
from coderl.swe.harbor_grader import Episode, HarborRunner, parse_reward
from coderl.swe.verifier_tools import state_findings, use_image_loader_cache
from tests.helpers import mini_episode
from tests.helpers.images import ROOT, local_bases
from tests.helpers.require import needs

# every test but the first two is slow: the local bases (mmdebstrap + the Python stand-in, minutes
# cold) and four image builds (the terminal tasks share one)
pytestmark = pytest.mark.timeout(3600)
TASKS = ROOT / "tests" / "fixtures" / "harbor"
TERMINAL = ROOT / "tests" / "fixtures" / "harbor-terminal"
TERMINAL_TASKS = ["install-offline", "etc-config", "repo-outside", "service-start"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    local_bases()
    return tmp_path_factory.mktemp("cache")


def task(name: str) -> HarborTask:
    return HarborTask.from_dir((TERMINAL if name in TERMINAL_TASKS else TASKS) / name)


async def episode_of(runner: HarborRunner, t: HarborTask, command: str = "", files: dict[str, str] | None = None) -> Episode:
    """An episode that runs ``command`` and writes ``files``, finished as a harness's is."""
    session = await runner.open_episode(t)
    try:
        for path, text in (files or {}).items():
            await session.write_file(path, text.encode())
        if command:
            await session.exec(command)
        return Episode(await session.finish(), await session.keep_state())
    finally:
        await session.close()


async def graded(runner: HarborRunner, t: HarborTask, ep: Episode):
    try:
        return await runner.grade(t, ep.diff, ep.state)
    finally:
        ep.remove()


def run(cache: Path, coro_fn):
    async def main():
        async with SessionHost() as host:
            return await coro_fn(HarborRunner(host, cache))

    return asyncio.run(main())


def test_task_directories_are_read(tmp_path):
    hello, mean, port = task("hello-shell"), task("mean-python"), task("port-from-etc")
    assert not hello.workdir_only and [task(n).image_tag == task("etc-config").image_tag.replace("etc-config", n)
                                       for n in TERMINAL_TASKS] == [True] * 4  # one image, four tags
    strict = tmp_path / "strict"
    (strict / "tests").mkdir(parents=True)
    (strict / "instruction.md").write_text("x\n")
    (strict / "tests" / "test.sh").write_text("")
    (strict / "task.toml").write_text('[verifier]\nworkdir_only = true\n[environment]\ndocker_image = "x"\n')
    assert HarborTask.from_dir(strict).workdir_only
    (strict / "task.toml").write_text('[verifier]\nworkdir_only = "yes"\n[environment]\ndocker_image = "x"\n')
    with pytest.raises(InvalidTask, match="workdir_only must be true or false"):
        HarborTask.from_dir(strict)
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


def test_episode_state_findings(tmp_path):
    """The verifier-tools check on a hand-made upper layer over a hand-made image: what hands the
    verifier to the agent is found, the task's own work (a new program, /etc, /root) is not."""
    image, upper = tmp_path / "image", tmp_path / "upper"
    for rel, text in {"usr/bin/tr": "tr", "usr/bin/grep": "grep", "etc/greeter/greeter.conf": "port = 1",
                      "usr/local/python/lib/python3.11/site-packages/ok.py": ""}.items():
        (image / rel).parent.mkdir(parents=True, exist_ok=True)
        (image / rel).write_text(text)
    for rel, text in {"usr/bin/tr": "forged", "usr/bin/coderl-greet": "new", "usr/local/bin/grep": "shadow",
                      "etc/greeter/greeter.conf": "port = 2", "etc/ld.so.preload": "/app/x.so", "root/proj/calc.py": "",
                      "usr/local/python/lib/python3.11/site-packages/sitecustomize.py": "",
                      "usr/local/python/lib/python3.11/site-packages/x.pth": "import os\n",
                      "usr/local/python/lib/python3.11/site-packages/paths.pth": "/root/proj\n",
                      "usr/local/python/lib/python3.11/site-packages/p-1.dist-info/entry_points.txt": "[pytest11]\np = p\n",
                      "app/fake/test.sh": ""}.items():
        (upper / rel).parent.mkdir(parents=True, exist_ok=True)
        (upper / rel).write_text(text)
    (upper / "tests").symlink_to("/app/fake")
    found = state_findings(upper, image, path="/usr/local/python/bin:/usr/local/bin:/usr/bin:/bin",
                           mount_points=["/tests", "/logs/verifier", "/app"])
    expected = ["/tests, where the verifier mounts /tests, was made a link", "the image's /usr/bin/tr was changed",
                "a new /usr/local/bin/grep shadows the image's /usr/bin/grep on the PATH",
                "the dynamic loader's configuration /etc/ld.so.preload was created",
                "a new Python start-up hook /usr/local/python/lib/python3.11/site-packages/sitecustomize.py",
                "a new /usr/local/python/lib/python3.11/site-packages/x.pth runs code when Python starts",
                "a new pytest plugin /usr/local/python/lib/python3.11/site-packages/p-1.dist-info/entry_points.txt"]
    assert sorted(found) == sorted(expected), found


def test_the_verifier_reads_the_images_loader_cache(tmp_path):
    """A package installed with a shared library rewrites /etc/ld.so.cache (dpkg's ldconfig
    trigger): no finding (it was one: every such install graded tampered), and the episode's cache
    is dropped, so no soname mapping of the agent's reaches the verifier; a deletion too."""
    image, upper = tmp_path / "image", tmp_path / "upper"
    for rel in ("etc/ld.so.cache", "usr/lib/x86_64-linux-gnu/libc.so.6"):
        (image / rel).parent.mkdir(parents=True, exist_ok=True)
        (image / rel).write_bytes(b"image")
    for rel in ("etc/ld.so.cache", "usr/lib/x86_64-linux-gnu/libnew.so.1"):
        (upper / rel).parent.mkdir(parents=True, exist_ok=True)
        (upper / rel).write_bytes(b"episode")
    assert state_findings(upper, image, path="/usr/bin:/bin", mount_points=["/tests"]) == []
    use_image_loader_cache(upper)
    assert not (upper / "etc" / "ld.so.cache").exists() and (upper / "usr/lib/x86_64-linux-gnu/libnew.so.1").exists()
    os.mknod(upper / "etc" / "ld.so.cache", 0o600 | stat.S_IFCHR, 0)  # the episode deleted it: a whiteout
    use_image_loader_cache(upper)
    assert not os.path.lexists(upper / "etc" / "ld.so.cache")
    use_image_loader_cache(upper)  # nothing there: nothing to do


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hello-shell", "mean-python", "port-from-etc", *TERMINAL_TASKS])
def test_oracle_scores_1_and_no_change_0(cache, name):
    """In the container the oracle left (system paths, /root, /opt included); no change: the image's."""
    async def body(runner):
        oracle = await runner.oracle(task(name))
        assert oracle.state is not None
        if name in TERMINAL_TASKS:
            assert not oracle.diff.strip(), "a terminal task's answer is outside the work dir"
        else:
            assert oracle.diff.strip(), "the oracle changed nothing in the work dir"
        return await graded(runner, task(name), oracle), await runner.grade(task(name), "")

    solved, empty = run(cache, body)
    assert (solved.status, solved.reward, solved.findings) == (GradeStatus.RESOLVED, 1.0, []), solved
    assert (empty.status, empty.reward) == (GradeStatus.UNRESOLVED, 0.0), empty
    if name == "mean-python":
        assert solved.rewards == {"reward": 1.0, "cases_passed": 1.0} and empty.rewards["cases_passed"] == 0.0


@pytest.mark.slow
def test_workdir_only_grades_the_work_dirs_diff_alone(cache):
    """The stricter option (task.toml's [verifier] workdir_only, a run's --workdir-only): the oracle's
    /etc change stays in its episode, so the verifier on the pristine image scores it 0."""
    strict = replace(task("etc-config"), workdir_only=True)

    async def body(runner):
        oracle = await runner.oracle(strict)
        assert oracle.state is None and not oracle.diff.strip()
        return await runner.grade(strict, oracle.diff, oracle.state)

    assert (lambda g: (g.status, g.reward))(run(cache, body)) == (GradeStatus.UNRESOLVED, 0.0)


@pytest.mark.slow
def test_what_an_episode_does_to_the_verifiers_tools_is_tampering(cache):
    """The agent writes the reward file, points /etc's config at its own answer (its right), and
    replaces the verifier's tools, the loader's and Python's start-up and /tests: the grade is
    tampered and the verifier never runs; graded on the work dir only, its answer is wrong."""
    command = ("mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && "
               "sed -i 's/8731/1234/' /etc/greeter/config.ini && echo 1234 > port.txt && "
               "printf '#!/bin/sh\\necho 1234\\n' > /usr/bin/tr && echo /app/x.so > /etc/ld.so.preload && "
               "mkdir -p /app/fake && ln -s /app/fake /tests && ls /tests /solution 2>&1; id -u")

    async def body(runner):
        t = task("port-from-etc")
        session = await runner.open_episode(t)
        try:
            r = await session.exec(command)
            assert "No such file" in r.stdout and r.stdout.strip().endswith("0"), r  # no tests, no solution here
            ep = Episode(await session.finish(), await session.keep_state())
        finally:
            await session.close()
        assert "port.txt" in ep.diff and "greeter" not in ep.diff and "reward" not in ep.diff
        strict = await runner.grade(replace(t, workdir_only=True), ep.diff)
        return await graded(runner, t, ep), strict

    whole, strict = run(cache, body)
    assert (whole.status, whole.reward) == (GradeStatus.TAMPERED, 0.0), whole
    assert {"the image's /usr/bin/tr was changed", "the dynamic loader's configuration /etc/ld.so.preload was created",
            "/tests, where the verifier mounts /tests, was made a link"} <= set(whole.findings), whole.findings
    assert (strict.status, strict.reward) == (GradeStatus.UNRESOLVED, 0.0), strict


KILLS_TEST_SH = ('import json, os, signal\njson.dump({"reward": 1}, open("/logs/verifier/reward.json", "w"))\n'
                 'os.kill(os.getppid(), signal.SIGKILL)\n\n\ndef mean(values):\n    return 0\n')
# a daemon (double fork, its own session) that waits for test.sh to end, then writes reward 1; it holds
# test.sh's stdout open, so PID 1 keeps draining it a moment after test.sh's exit (with no rule, it wins)
REWRITES_AFTER = ('import json, os, time\ntest_sh = os.getppid()\nout = os.open(f"/proc/{test_sh}/fd/1", os.O_WRONLY)\n'
                  'if os.fork() == 0:\n    os.setsid()\n'
                  '    if os.fork() == 0:\n        while True:\n            try:\n                os.kill(test_sh, 0)\n'
                  '            except ProcessLookupError:\n                break\n            time.sleep(0.0005)\n'
                  '        json.dump({"reward": 1}, open("/logs/verifier/reward.json", "w"))\n        os._exit(0)\n'
                  '    os._exit(0)\n\n\ndef mean(values):\n    return 0\n')


@pytest.mark.slow
@pytest.mark.parametrize(("module", "finding"), [(KILLS_TEST_SH, "test.sh was killed by signal 9"),
                                                 (REWRITES_AFTER, "processes outlived test.sh")],
                         ids=["kills-test-sh", "rewrites-after-test-sh"])
def test_a_verifier_that_did_not_finish_gives_no_reward(cache, module, finding):
    """mean-python's verifier imports the agent's stats.py: a module that writes reward 1 and kills
    test.sh, or leaves a daemon that writes it once test.sh has ended, is not scored."""
    async def body(runner):
        t = task("mean-python")
        return await graded(runner, t, await episode_of(runner, t, files={"stats.py": module}))

    result = run(cache, body)
    assert (result.status, result.reward) == (GradeStatus.UNRESOLVED, 0.0), result
    assert any(finding in f for f in result.findings), result.findings


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
        return await graded(runner, t, await episode_of(runner, t, files={"stats.py": forged}))

    result = run(cache, body)
    assert (result.status, result.reward, result.findings) == (GradeStatus.UNRESOLVED, 0.0, []), result


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


ETC_ANSWER = ("sed -i 's/^port = 8080$/port = 9090/' /etc/greeter/greeter.conf && "
              "sed -i '/^\\[server\\]$/a motd = hello from etc' /etc/greeter/greeter.conf && cat /etc/greeter/greeter.conf")


@pytest.mark.heavy  # the stock harness in an image session: ~7 min here each, past CI's budget
@pytest.mark.verl
@needs(mini_episode.installed(), mini_episode.MISSING)
@pytest.mark.parametrize(("name", "command"), [
    ("hello-shell", "echo 'Hello, world!' > /app/hello.txt && cat /app/hello.txt"),
    ("etc-config", ETC_ANSWER)])
def test_stock_harness_through_the_agent_loop(cache, tmp_path, name, command):
    """A `coderl data harbor` row through the verl agent loop: the unmodified mini-swe-agent in the
    task's image (hello-shell: minimal Debian, no Python, no libssl there; etc-config: its answer is
    under /etc, outside the work dir), graded by the task's verifier in the container the episode
    left: reward 1."""
    from coderl.data.harbor import harbor_row

    row = harbor_row(task(name), "", cache)
    out = mini_episode.run_mini_episode(tmp_path, command,
                                        prompt=row["prompt"], extra_info=row["extra_info"],
                                        data_source=row["data_source"], reward_model=row["reward_model"])
    extra = out.extra_fields
    assert extra["sandbox_error"] == 0 and extra["agent_turns"] == 2, extra.get("agent_output_tail", extra)
    assert extra["grade_status"] == "resolved" and out.reward_score == 1.0, extra


@pytest.mark.slow
def test_eval_harbor_goes_on_past_a_task_whose_image_fails(cache, tmp_path):
    """`coderl eval harbor --oracle`: a task whose image cannot be had is that task's sandbox_error
    (never scored); the other task is graded; the run returns."""
    from coderl.eval.harbor import HarborEvalConfig, evaluate_harbor

    broken = tmp_path / "tasks" / "no-image"
    (broken / "tests").mkdir(parents=True)
    (broken / "instruction.md").write_text("Nothing to do.\n")
    (broken / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (broken / "task.toml").write_text('[environment]\ndocker_image = "localhost/coderl-test/no-such-image:0"\n')
    os.environ.setdefault("CODERL_IMAGE_PULL", "never")
    summary = asyncio.run(evaluate_harbor(HarborEvalConfig(tasks=(str(broken), str(TASKS / "hello-shell")),
                                                           out_dir=str(tmp_path / "out"), cache_dir=cache, oracle=True)))
    records = {json.loads(line)["instance_id"]: json.loads(line)
               for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()}
    assert records["no-image"]["status"] == "sandbox_error" and records["no-image"]["reward"] is None, records
    assert "no-such-image" in records["no-image"]["message"]
    assert (records["hello-shell"]["status"], records["hello-shell"]["reward"]) == ("resolved", 1.0), records
    assert (summary["resolved"], summary["sandbox_errors"], summary["tasks"]) == (1, 1, 2), summary
