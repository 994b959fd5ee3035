"""Harbor tasks on our sandbox: the task's image, the agent's (or the oracle's) episode in it, and the
verifier in a FRESH sandbox from the pristine image.

Grading a diff (``HarborRunner.grade``):
1. the task's image (built from ``environment/`` once per content hash, or the named reference),
   unpacked once (``coderl.sandbox.image_rootfs``);
2. a fresh image-backed session (nothing of the episode in it: not its system-path changes, not its
   /tmp, /logs or processes), as the verifier's user, with ``tests/`` bound read-only at /tests;
3. the episode's work-dir diff applied by our own git from outside the session's root
   (``SessionHost.apply_diff``): the only thing that carries over;
4. ``bash /tests/test.sh`` in the work dir, under the verifier's timeout and environment; every
   process it started is killed when it returns (the session's PID 1 does that);
5. then PID 1 (ours, unreachable to the verifier's processes) reads /logs/verifier/reward.txt, else
   reward.json, inside the sandbox (a link there resolves in the sandbox, never on the host).

Outcomes: ``resolved`` (reward >= 1), ``unresolved`` (a lower reward, or the verifier ran past its
timeout: code that hangs the tests is the agent's), ``apply_failed`` (reward 0), ``sandbox_error``
(no image, the sandbox failed, no readable reward from a verifier that finished: the task's or our
fault, never scored). Limits of this boundary: the agent's code runs beside test.sh in the
verifier's sandbox (as in Harbor itself), so a task whose test.sh writes the reward only at the end,
unconditionally from one check, is as forgeable here as there; test.sh and the tests are read-only.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from coderl.errors import EditRejected, ImageNotPulled, SandboxError
from coderl.sandbox.image_rootfs import ImageRoot, unpack, unpacked
from coderl.sandbox.session import Session, SessionHost, SessionLimits
from coderl.swe.grade_status import GradeStatus
from coderl.swe.harbor import AGENT_LOG_DIR, SOLUTION_DIR, TESTS_DIR, VERIFIER_DIR, HarborTask
from coderl.swe.harness import SANDBOX_PORT, HarnessResult, run_in_session

_REWARD_BYTES = 1 << 16


@dataclass(frozen=True)
class HarborResult:
    name: str
    status: GradeStatus
    reward: float | None
    rewards: dict[str, float] = field(default_factory=dict)
    message: str = ""
    log_tail: str = ""
    wall_s: float = 0.0
    # the episode record's grader fields (shared with repository grading): a verifier names no tests
    fail_to_pass: dict[str, str] = field(default_factory=dict)
    pass_to_pass: dict[str, str] = field(default_factory=dict)
    tests_touched: list[str] = field(default_factory=list)

    @property
    def resolved(self) -> bool:
        return self.status == GradeStatus.RESOLVED

    def to_dict(self) -> dict:
        return {**self.__dict__, "status": self.status.value, "resolved": self.resolved}


def parse_reward(text: bytes | None, json_bytes: bytes | None) -> dict[str, float]:
    """Harbor's rewards: reward.txt's one number as ``{"reward": x}``, else reward.json's object of
    numbers. Raises ValueError for anything else (no file, not a finite number)."""
    if text is not None:
        rewards = {"reward": float(text.decode("utf-8", "replace").strip())}
    elif json_bytes is not None:
        loaded = json.loads(json_bytes)
        if not isinstance(loaded, dict) or not loaded:
            raise ValueError("reward.json must be an object of numbers")
        rewards = {str(k): float(v) for k, v in loaded.items() if not isinstance(v, bool)}
    else:
        raise ValueError(f"the verifier wrote neither {VERIFIER_DIR}/reward.txt nor reward.json")
    if not rewards or not all(math.isfinite(v) for v in rewards.values()):
        raise ValueError(f"rewards must be finite numbers, got {rewards}")
    return rewards


def scalar(rewards: dict[str, float]) -> float:
    """The one number a trainer takes: ``reward`` when there, else the mean of the rewards."""
    return rewards["reward"] if "reward" in rewards else sum(rewards.values()) / len(rewards)


class HarborRunner:
    """Images, episodes and grading of Harbor tasks on one ``SessionHost``."""

    def __init__(self, host: SessionHost, cache_dir: Path, *, concurrency: int = 2, fetch: bool = True) -> None:
        """``fetch``: build or pull a task image this machine lacks (False on a service, which
        answers `ImageNotPulled` instead: `coderl images pull TASK_DIR` builds it ahead)."""
        self.host, self.cache_dir, self.fetch = host, cache_dir, fetch
        self._gate = asyncio.Semaphore(concurrency)

    async def image(self, task: HarborTask) -> ImageRoot:
        """The task's image, built and unpacked when this machine has not yet (off the event loop)."""
        if not self.fetch:
            try:
                return await asyncio.to_thread(unpacked, task.image or task.image_tag, self.cache_dir)
            except ImageNotPulled:
                raise ImageNotPulled(f"Harbor task {task.name}: its image {task.image or task.image_tag} is not on this "
                                     f"machine: pre-pull (or build) it with `coderl images pull {task.task_dir}`") from None
        # built once per process: the tag names environment/'s content, so it never goes stale
        return await asyncio.to_thread(unpack, await asyncio.to_thread(task.built_image), self.cache_dir)

    def limits(self, task: HarborTask, timeout_s: float) -> SessionLimits:
        return SessionLimits(episode_s=timeout_s + 60, exec_s=timeout_s, memory_mb=task.memory_mb or 4096,
                             disk_mb=task.storage_mb or 2048, max_processes=512, output_kb=1024)

    async def open_episode(self, task: HarborTask, *, env: dict[str, str] | None = None,
                           ro_binds: tuple[str, ...] = (), gateway_socket: str | None = None,
                           gateway_port: int | None = None, timeout_s: float | None = None,
                           ro_mounts: tuple[tuple[str, str], ...] = (), limits: SessionLimits | None = None) -> Session:
        """An agent's episode: the task's image, its work dir, the agent's user; never the tests.
        ``limits``: the caller's (a remote session's), else the task's with ``timeout_s``."""
        image = await self.image(task)
        return await self.host.open_image(
            image, workdir=task.workdir or None, user=task.agent_user,
            limits=limits or self.limits(task, timeout_s or task.agent_timeout_s), ro_binds=ro_binds, ro_mounts=ro_mounts,
            gateway_socket=gateway_socket, gateway_port=gateway_port, env={**task.environment_env, **(env or {})})

    async def oracle_diff(self, task: HarborTask) -> str:
        """What ``solution/solve.sh`` changes in the work dir, run in the agent's place (/solution
        bound read-only, the solution's environment): the oracle gate's diff."""
        session = await self.open_episode(task, env=task.solution_env,
                                          ro_mounts=((str(task.solution_dir), SOLUTION_DIR),))
        try:
            await session.exec(f"mkdir -p {AGENT_LOG_DIR}; bash {SOLUTION_DIR}/solve.sh", timeout_s=task.agent_timeout_s)
            return await session.finish()
        finally:
            await session.close()

    async def run_agent(self, task: HarborTask, template: str, *, gateway_socket: str, session_id: str, model: str,
                        timeout_s: float | None = None, harness_binds: tuple[str, ...] = (),
                        env: dict[str, str] | None = None) -> HarnessResult:
        """An agent harness's episode on the task (``coderl.swe.harness`` placeholders), its one way
        out the gateway relay; the result carries the work dir's diff."""
        budget = timeout_s or task.agent_timeout_s
        image = await self.image(task)
        workdir = task.workdir or image.workdir

        async def open_session(harness_env: dict[str, str]) -> Session:
            return await self.open_episode(task, env={**harness_env, **(env or {})}, ro_binds=harness_binds,
                                           gateway_socket=gateway_socket, gateway_port=SANDBOX_PORT, timeout_s=budget)

        return await run_in_session(template, open_session=open_session, task=task.instruction, workdir=workdir,
                                    session_id=session_id, model=model, timeout_s=budget, capture_diff=True)

    async def grade(self, task: HarborTask, diff: str) -> HarborResult:
        t0 = time.monotonic()
        result = await self._grade(task, diff)
        return HarborResult(**{**result.__dict__, "wall_s": round(time.monotonic() - t0, 3)})

    async def _grade(self, task: HarborTask, diff: str) -> HarborResult:
        def outcome(status: GradeStatus, message: str = "", reward: float | None = None, **kw: object) -> HarborResult:
            return HarborResult(name=task.name, status=status, reward=status.reward if reward is None else reward,
                                message=message, **kw)

        async with self._gate:
            try:
                image = await self.image(task)
                session = await self.host.open_image(
                    image, workdir=task.workdir or None, user=task.verifier_user,
                    limits=self.limits(task, task.verifier_timeout_s),
                    ro_mounts=((str(task.tests_dir), TESTS_DIR),), env={**task.environment_env, **task.verifier_env})
            except SandboxError as exc:
                return outcome(GradeStatus.SANDBOX_ERROR, str(exc))
            try:
                if diff.strip():
                    error = await self.host.apply_diff(session, diff)
                    if error:
                        return outcome(GradeStatus.APPLY_FAILED, f"the diff does not apply: {error[-500:]}")
                run = await session.exec(f"mkdir -p {VERIFIER_DIR} && bash {TESTS_DIR}/test.sh",
                                         timeout_s=task.verifier_timeout_s)
                log = (run.stdout + run.stderr)[-4000:]
                if run.timed_out:
                    return outcome(GradeStatus.UNRESOLVED, f"the verifier ran past {task.verifier_timeout_s:.0f} s",
                                   reward=0.0, log_tail=log)
                try:
                    rewards = parse_reward(await _read(session, f"{VERIFIER_DIR}/reward.txt"),
                                           await _read(session, f"{VERIFIER_DIR}/reward.json"))
                except ValueError as exc:
                    return outcome(GradeStatus.SANDBOX_ERROR, f"no reward: {exc}", log_tail=log)
                value = scalar(rewards)
                status = GradeStatus.RESOLVED if value >= 1.0 else GradeStatus.UNRESOLVED
                return outcome(status, reward=value, rewards=rewards, log_tail=log)
            except SandboxError as exc:
                return outcome(GradeStatus.SANDBOX_ERROR, str(exc))
            finally:
                await session.close()


async def _read(session: Session, path: str) -> bytes | None:
    try:
        return await session.read_file(path, max_bytes=_REWARD_BYTES)
    except EditRejected:  # no such file (or not a regular one)
        return None
