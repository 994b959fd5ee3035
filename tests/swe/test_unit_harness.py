"""coderl.swe.harness on its own: the command template, a harness on the host (its environment, its
exit code, its process group killed at the time-out) and in a real session sandbox (the task file,
the relayed gateway URL, the diff it leaves)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from coderl.errors import BadRequest
from coderl.swe.harness import (
    SANDBOX_PORT,
    TASK_FILE,
    render_command,
    run_in_sandbox,
    run_in_session,
    run_on_host,
)
from tests.helpers.poll import wait_for
from tests.helpers.service import exited

VALUES = {"base_url": "http://127.0.0.1:9/v1", "api_key": "sess 1", "model": "m", "task_file": "/t/task.md"}


def test_render_command_quotes_every_value():
    assert render_command("agent --url {base_url} --key {api_key} --task {task_file}", VALUES) == \
        "agent --url http://127.0.0.1:9/v1 --key 'sess 1' --task /t/task.md"
    hostile = render_command("echo {model}", {"model": "$(touch /tmp/x); `id` 'q'"})
    assert subprocess.run(["bash", "-c", hostile], capture_output=True, text=True).stdout == "$(touch /tmp/x); `id` 'q'\n"


@pytest.mark.parametrize("template, named", [("agent {nope}", "'nope'"), ("agent {0}", "index 0")])
def test_render_command_refuses_an_unknown_placeholder(template, named):
    with pytest.raises(BadRequest, match=rf"unknown placeholder .*{named}.*\(known: api_key, base_url, model, task_file\)"):
        render_command(template, VALUES)


def test_host_harness_gets_the_task_the_urls_and_its_exit_code(tmp_path):
    script = ('cat "$CODERL_TASK_FILE"; echo "|$OPENAI_BASE_URL|$ANTHROPIC_BASE_URL|$OPENAI_API_KEY|$CODERL_MODEL|'
              '$EXTRA|$PWD|"; echo {api_key} {task_file}; exit 3')
    result = asyncio.run(run_on_host(script, workdir=tmp_path, task="Fix it.\n", gateway_url="http://127.0.0.1:7",
                                     session_id="s-1", model="qwen", timeout_s=60, env={"EXTRA": "x"}))
    assert (result.exit_code, result.timed_out, result.isolation, result.diff) == (3, False, "none", None)
    task_path = tmp_path / TASK_FILE
    assert result.output_tail == (f"Fix it.\n|http://127.0.0.1:7/v1|http://127.0.0.1:7|s-1|qwen|x|{tmp_path}|\n"
                                  f"s-1 {task_path}\n")
    assert task_path.read_text() == "Fix it.\n"
    assert result.to_dict()["exit_code"] == 3 and result.to_dict()["output_limit"] is False


def test_host_harness_time_out_kills_its_process_group(tmp_path):
    """A harness past its time: no exit code, and the background child it started dies with it."""
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    result = asyncio.run(run_on_host(f"sleep 300 & echo $! > {pid_file}; echo started; wait", workdir=tmp_path,
                                     task="t", gateway_url="http://127.0.0.1:7", session_id="s", model="m",
                                     timeout_s=3))
    assert (result.exit_code, result.timed_out) == (None, True) and "started" in result.output_tail
    assert time.monotonic() - started < 60
    child = int(pid_file.read_text())
    wait_for(lambda: exited(child), timeout_s=30, what=f"the harness's child {child} to die")


def _git_repo(path: Path) -> Path:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    path.mkdir()
    (path / "m.py").write_text("x = 1\n")
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *cmd], cwd=path, env=env, check=True)
    return path


def test_sandbox_harness_sees_the_task_and_the_relay_and_leaves_a_diff(tmp_path):
    from coderl.sandbox.session import SessionHost, SessionLimits

    repo = _git_repo(tmp_path / "repo")
    script = ('cat "$CODERL_TASK_FILE"; echo "$OPENAI_BASE_URL $OPENAI_API_KEY $PWD"; echo {task_file}; '
              'echo "x = 2" > m.py; exit 4')
    with socket.socket(socket.AF_UNIX) as gateway:  # the gateway's socket: bound into the sandbox
        gateway.bind(str(tmp_path / "gw.sock"))
        gateway.listen()

        async def main():
            async with SessionHost() as host:
                return await run_in_sandbox(script, host=host, repo_dir=repo, task="Make x two.\n",
                                            gateway_socket=str(tmp_path / "gw.sock"), session_id="s-9", model="m",
                                            timeout_s=60, limits=SessionLimits(episode_s=90, exec_s=60),
                                            capture_diff=True)

        result = asyncio.run(main())
    assert (result.exit_code, result.timed_out, result.isolation, result.diff_error) == (4, False, "sandbox", None)
    assert result.output_tail.splitlines() == ["Make x two.", f"http://127.0.0.1:{SANDBOX_PORT}/v1 s-9 /repo",
                                               f"/tmp/{TASK_FILE}"]
    assert "-x = 1\n+x = 2\n" in result.diff and (repo / "m.py").read_text() == "x = 1\n"  # the host's tree is untouched


def test_the_episodes_end_is_told_before_its_diff_is_captured(tmp_path):
    """``ended`` (a grader starts its run then: ``RepoGrader.expect``) runs once the harness has
    returned and before the diff is captured, so the run's start overlaps the capture."""
    from coderl.sandbox.session import SessionHost, SessionLimits

    repo = _git_repo(tmp_path / "repo")
    order: list[str] = []

    async def main():
        async with SessionHost() as host:
            async def open_session(env):  # type: ignore[no-untyped-def]
                session = await host.open(repo, env=env, limits=SessionLimits(episode_s=90, exec_s=60))
                finish = session.finish

                async def finished():  # type: ignore[no-untyped-def]
                    order.append("capture")
                    return await finish()
                session.finish = finished
                return session

            return await run_in_session('echo "x = 2" > m.py', open_session=open_session, task="t", workdir="",
                                        session_id="s", model="m", timeout_s=60, capture_diff=True,
                                        ended=lambda: order.append("ended"))

    result = asyncio.run(main())
    assert order == ["ended", "capture"] and "+x = 2\n" in result.diff
