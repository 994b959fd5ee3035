"""Running an unmodified agent harness for one episode, pointed at the gateway.

A harness is a shell command template. Placeholders: ``{base_url}`` (OpenAI-style, ending in
``/v1``), ``{anthropic_base_url}`` (without ``/v1``), ``{api_key}`` (the session id: the gateway
reads the session from the API key), ``{model}``, ``{task_file}`` (the task text, a file in the
work dir) and ``{workdir}``. The same values are in the environment as ``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``, ``CODERL_TASK_FILE``,
``CODERL_MODEL``, so most harnesses need no flags at all.

Placements:
- ``sandbox`` (default): a session sandbox of `coderl.sandbox.session` over the episode's work
  dir (a git work tree), with the gateway's unix socket bound in and relayed to
  ``127.0.0.1:<port>`` inside: the harness's only way out. The harness's own install (a venv)
  is bound read-only (``harness_binds``).
- remote (``run_in_remote_sandbox``): the same sandbox on a sandbox node, opened through the
  session service (`coderl.client.SessionService`); the node relays ``127.0.0.1:<port>`` to the
  gateway's network address with the episode's credential (`coderl.server.gateway_relay`).
- ``host``: a plain subprocess in the work dir, for debugging a harness. No isolation: the
  episode's record says so (``isolation: none``).

Whatever the harness does is its outcome, never an exception: an exit code, a time-out, output
past the cap (``output_limit``: the sandbox killed it; on the host only a tail is kept), or files
that make no diff (``diff_error``: one over the size cap, unreadable ones; no valid patch).
Exceptions are for our side (the sandbox did not start or died).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coderl.errors import BadRequest, DiffUnavailable

TASK_FILE = ".coderl_task.md"
SANDBOX_PORT = 18001  # where the gateway relay listens inside a session sandbox
_TAIL_BYTES = 16384  # of a host harness's output: kept while the rest streams past


@dataclass
class HarnessResult:
    exit_code: int | None
    timed_out: bool
    wall_s: float
    output_tail: str
    isolation: str  # "sandbox" or "none"
    diff: str | None = None  # the episode's change, when run in a sandbox over a repository
    diff_error: str | None = None  # why the episode's files make no diff (the agent's doing): no valid patch
    output_limit: bool = False  # killed for printing far more than the sandbox keeps
    state: Any = None  # the episode's whole filesystem change, when asked (``Session.keep_state``): the caller removes it

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "state"}


def render_command(template: str, values: dict[str, str]) -> str:
    try:
        return template.format(**{k: shlex.quote(v) for k, v in values.items()})
    except (KeyError, IndexError) as exc:
        raise BadRequest(f"harness command: unknown placeholder {exc} (known: {', '.join(sorted(values))})") from None


def _values(base_url: str, session_id: str, model: str, task_path: str, workdir: str) -> dict[str, str]:
    return {"base_url": base_url + "/v1", "anthropic_base_url": base_url, "api_key": session_id, "model": model,
            "task_file": task_path, "workdir": workdir}


def _environment(values: dict[str, str]) -> dict[str, str]:
    return {"OPENAI_BASE_URL": values["base_url"], "OPENAI_API_BASE": values["base_url"],
            "OPENAI_API_KEY": values["api_key"], "ANTHROPIC_BASE_URL": values["anthropic_base_url"],
            "ANTHROPIC_API_KEY": values["api_key"], "CODERL_TASK_FILE": values["task_file"],
            "CODERL_MODEL": values["model"]}


def _tail(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


async def run_on_host(template: str, *, workdir: Path, task: str, gateway_url: str, session_id: str,
                      model: str, timeout_s: float, env: dict[str, str] | None = None) -> HarnessResult:
    """The harness as a host subprocess (no isolation); its process group is killed at the end."""
    (workdir / TASK_FILE).write_text(task)
    values = _values(gateway_url, session_id, model, str(workdir / TASK_FILE), str(workdir))
    command = render_command(template, values)
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", command, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **_environment(values), **(env or {})})
    tail = bytearray()

    async def drain() -> None:  # a harness that floods its output costs a tail's memory, no more
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(1 << 16):
            tail.extend(chunk)
            del tail[:-_TAIL_BYTES]
        await proc.wait()

    timed_out = False
    try:
        await asyncio.wait_for(drain(), timeout=timeout_s)
    except TimeoutError:
        timed_out = True
    finally:  # the harness and anything it left running in its process group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    return HarnessResult(None if timed_out else proc.returncode, timed_out, round(time.monotonic() - started, 3),
                         _tail(tail.decode("utf-8", "replace")), "none")


async def run_in_sandbox(template: str, *, host: Any, repo_dir: Path, task: str, gateway_socket: str, session_id: str,
                         model: str, timeout_s: float, harness_binds: tuple[str, ...] = (),
                         env_dir: Path | None = None, limits: Any = None, env: dict[str, str] | None = None,
                         capture_diff: bool = False) -> HarnessResult:
    """The harness inside a session sandbox (`coderl.sandbox.session.SessionHost`) over
    ``repo_dir``; its one way out is the gateway socket, relayed to 127.0.0.1:SANDBOX_PORT."""
    from coderl.sandbox.session import REPO

    values = _values(f"http://127.0.0.1:{SANDBOX_PORT}", session_id, model, f"/tmp/{TASK_FILE}", REPO)
    session = await host.open(repo_dir, limits=limits or _limits(timeout_s), env_dir=env_dir, ro_binds=harness_binds,
                              gateway_socket=gateway_socket, gateway_port=SANDBOX_PORT,
                              env={**_environment(values), **(env or {})})
    return await _episode(session, template, values, task, timeout_s, capture_diff)


async def run_in_remote_sandbox(template: str, *, sessions: Any, task_row: dict[str, Any] | None, task: str,
                                gateway_url: str, session_id: str, model: str, timeout_s: float,
                                limits: Any = None, env: dict[str, str] | None = None,
                                capture_diff: bool = False, image: dict[str, Any] | None = None,
                                harbor: dict[str, Any] | None = None) -> HarnessResult:
    """The harness in a session sandbox on a sandbox node (``sessions``: a
    `coderl.client.SessionService`), over the snapshot of ``task_row`` (None: an empty work tree)
    from that node's own store, or in the row's ``image`` / the node's ``harbor`` task
    (`coderl.server.image_tasks`). The node relays the sandbox's 127.0.0.1:SANDBOX_PORT to
    ``gateway_url`` (the gateway as the node reaches it) with ``session_id`` as the credential:
    the harness sees what it sees in a local sandbox. The harness's own install must be on the
    node, bound by the service (``CODERL_SESSION_BINDS``): a request never names host paths."""
    values = _values(f"http://127.0.0.1:{SANDBOX_PORT}", session_id, model, f"/tmp/{TASK_FILE}", "")
    session = await sessions.open(task_row, limits=limits or _limits(timeout_s), image=image, harbor=harbor,
                                  env={**_environment(values), **(env or {})}, gateway=(gateway_url, session_id))
    values["workdir"] = session.workdir  # the node's answer: /repo, or the image's work dir
    return await _episode(session, template, values, task, timeout_s, capture_diff)


async def run_in_session(template: str, *, open_session: Callable[[dict[str, str]], Awaitable[Any]], task: str,
                         workdir: str, session_id: str, model: str, timeout_s: float,
                         capture_diff: bool = False, keep_state: bool = False,
                         ended: Callable[[], None] | None = None) -> HarnessResult:
    """The harness in a session its caller opens (``open_session(env)``, given the harness's
    environment; e.g. an image-backed one, `coderl.swe.harbor_grader.HarborRunner`) over ``workdir``,
    relayed to the gateway at 127.0.0.1:SANDBOX_PORT as in ``run_in_sandbox`` ('' = the session's own). ``keep_state``: the
    result also carries the episode's filesystem change (a local session's). ``ended``: called when
    the harness has returned, before the diff is captured (a grader starts its run then)."""
    values = _values(f"http://127.0.0.1:{SANDBOX_PORT}", session_id, model, f"/tmp/{TASK_FILE}", workdir)
    session = await open_session(_environment(values))
    values["workdir"] = workdir or session.workdir  # '': the session's own (/repo, or the image's work dir)
    return await _episode(session, template, values, task, timeout_s, capture_diff, keep_state, ended)


def _limits(timeout_s: float) -> Any:
    from coderl.sandbox.session import SessionLimits

    return SessionLimits(episode_s=timeout_s + 30, exec_s=timeout_s)


async def _episode(session: Any, template: str, values: dict[str, str], task: str, timeout_s: float,
                   capture_diff: bool, keep_state: bool = False, ended: Callable[[], None] | None = None) -> HarnessResult:
    """One episode in an open session, local or remote (the same interface); closes it."""
    started = time.monotonic()
    diff = diff_error = state = None
    try:
        await session.write_file(f"/tmp/{TASK_FILE}", task.encode())
        result = await session.exec(render_command(template, values), timeout_s=timeout_s)
        if ended is not None:
            ended()
        if capture_diff:
            try:
                diff = await session.finish()
            except DiffUnavailable as exc:
                diff_error = str(exc)
        if keep_state:
            state = await session.keep_state()
    finally:
        await session.close()
    return HarnessResult(result.exit_code, result.timed_out, round(time.monotonic() - started, 3),
                         _tail(result.stdout + result.stderr), "sandbox", diff, diff_error, result.output_limit, state)
