"""Harbor tasks on our sandbox: the task's image, the agent's (or the oracle's) episode in it, and the
verifier in a fresh sandbox over the container that episode left.

Grading an episode (``HarborRunner.grade``), as Harbor runs ``tests/test.sh``:
1. the task's image (built from ``environment/`` once per content hash, or the named reference),
   unpacked once (``coderl.sandbox.image_rootfs``);
2. the episode's state (``Session.keep_state``: its overlay's upper layer, every path it created,
   changed or deleted, system paths included; its processes all dead) checked on the host
   (``coderl.swe.verifier_tools``): a changed verifier tool, loader configuration, Python start-up
   hook or a link on a mount point is ``tampered``, and the verifier does not run;
3. a fresh sandbox whose root is that state over the image under a fresh layer, as the verifier's
   user, ``tests/`` bound read-only at /tests, an empty tmpfs at /logs/verifier, nothing of the
   episode's /tmp or processes. With ``workdir_only`` (the task's ``[verifier] workdir_only``, or
   the run's) the pristine image instead, with only the work dir's diff applied by our own git from
   outside the root (``SessionHost.apply_diff``);
4. ``exec bash /tests/test.sh`` in the work dir under the verifier's timeout and environment. Its
   reward counts only from a verifier that finished: exit status 0, no signal, within its timeout,
   and no other process there, running or ended, when it ended (PID 1 reaps nothing while test.sh
   runs but what provably ended before it, ``session_init._poll``): anything that could write the
   reward after test.sh's last word (a module that kills test.sh, a daemon it leaves) makes the
   grade ``unresolved`` with a finding, whatever reward file is there;
5. then PID 1 (ours, unreachable to the verifier's processes) reads /logs/verifier/reward.txt, else
   reward.json, inside the sandbox, after every process is dead.

Outcomes: ``resolved`` (reward >= 1), ``unresolved`` (a lower reward, or a verifier that did not
finish), ``tampered`` (step 2), ``apply_failed`` (workdir_only: the diff does not apply),
``sandbox_error`` (no image, the sandbox failed, no readable reward from a verifier that finished:
the task's or our fault, never scored). Limit: the agent's code may run inside test.sh (a verifier
importing the agent's module, as in Harbor): it can do what test.sh's own process can while test.sh
runs, so a test.sh must write its reward last, from checks the agent's code cannot answer for it.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

from coderl.errors import EditRejected, ImageNotPulled, SandboxError
from coderl.sandbox import image_session, isolation
from coderl.sandbox.image_rootfs import ImageRoot, unpack, unpacked
from coderl.sandbox.inside_pyc import PYC_INSIDE
from coderl.sandbox.result import ExecResult
from coderl.sandbox.session import EpisodeState, Session, SessionHost, SessionLimits
from coderl.swe.grade_status import GradeResult, GradeStatus
from coderl.swe.harbor import AGENT_LOG_DIR, SOLUTION_DIR, TESTS_DIR, VERIFIER_DIR, HarborTask
from coderl.swe.harness import SANDBOX_PORT, HarnessResult, run_in_session
from coderl.swe.verifier_tools import state_findings, use_image_loader_cache

_REWARD_BYTES = 1 << 16


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


@dataclass
class Episode:
    """A finished episode: its work dir's diff and, unless the task grades the work dir only, its
    whole filesystem change (``state``), which the holder removes (``remove``) once graded."""

    diff: str
    state: EpisodeState | None = None

    def remove(self) -> None:
        if self.state is not None:
            self.state.remove()
            self.state = None


def scalar(rewards: dict[str, float]) -> float:
    """The one number a trainer takes: ``reward`` when there, else the mean of the rewards."""
    return rewards["reward"] if "reward" in rewards else sum(rewards.values()) / len(rewards)


class HarborRunner:
    """Images, episodes and grading of Harbor tasks on one ``SessionHost``."""

    def __init__(self, host: SessionHost, cache_dir: Path, *, concurrency: int = 2, fetch: bool = True,
                 gate: asyncio.Semaphore | None = None) -> None:
        """``fetch``: build or pull a task image this machine lacks (False on a service, which
        answers `ImageNotPulled` instead: `coderl images pull TASK_DIR` builds it ahead)."""
        self.host, self.cache_dir, self.fetch = host, cache_dir, fetch
        self._gate = gate or asyncio.Semaphore(concurrency)  # a bound shared with other graders, when given

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

    async def oracle(self, task: HarborTask) -> Episode:
        """``solution/solve.sh`` run in the agent's place (/solution bound read-only, the solution's
        environment): the oracle gate's episode."""
        session = await self.open_episode(task, env=task.solution_env,
                                          ro_mounts=((str(task.solution_dir), SOLUTION_DIR),))
        try:
            await session.exec(f"mkdir -p {AGENT_LOG_DIR}; bash {SOLUTION_DIR}/solve.sh", timeout_s=task.agent_timeout_s)
            diff = await session.finish()
            return Episode(diff, None if task.workdir_only else await session.keep_state())
        finally:
            await session.close()

    async def run_agent(self, task: HarborTask, template: str, *, gateway_socket: str, session_id: str, model: str,
                        timeout_s: float | None = None, harness_binds: tuple[str, ...] = (),
                        env: dict[str, str] | None = None) -> HarnessResult:
        """An agent harness's episode on the task (``coderl.swe.harness`` placeholders), its one way
        out the gateway relay; the result carries the work dir's diff and (unless the task grades the
        work dir only) the episode's ``state``, which the caller removes."""
        budget = timeout_s or task.agent_timeout_s
        image = await self.image(task)
        workdir = task.workdir or image.workdir

        async def open_session(harness_env: dict[str, str]) -> Session:
            return await self.open_episode(task, env={**harness_env, **(env or {})}, ro_binds=harness_binds,
                                           gateway_socket=gateway_socket, gateway_port=SANDBOX_PORT, timeout_s=budget)

        return await run_in_session(template, open_session=open_session, task=task.instruction, workdir=workdir,
                                    session_id=session_id, model=model, timeout_s=budget, capture_diff=True,
                                    keep_state=not task.workdir_only)

    async def grade(self, task: HarborTask, diff: str, state: EpisodeState | None = None) -> GradeResult:
        """The verifier on the container the episode left (``state``, removed once graded), or, with
        no state or a task that asks for it, on the pristine image with the work dir's ``diff`` applied."""
        t0 = time.monotonic()
        try:
            result = await self._grade(task, diff, None if task.workdir_only else state)
        finally:
            if state is not None:
                state.remove()
        return replace(result, wall_s=round(time.monotonic() - t0, 3))

    async def _grade(self, task: HarborTask, diff: str, state: EpisodeState | None) -> GradeResult:
        def outcome(status: GradeStatus, message: str = "", reward: float | None = None, **kw: object) -> GradeResult:
            return GradeResult(instance_id=task.name, status=status, reward=status.reward if reward is None else reward,
                               message=message, **kw)

        async with self._gate:
            try:
                image = await self.image(task)
                workdir = task.workdir or image.workdir
                if state is not None:
                    await asyncio.to_thread(use_image_loader_cache, state.upper)
                    findings = await asyncio.to_thread(
                        state_findings, state.upper, image.rootfs, path=image.env.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
                        mount_points=_mount_points(workdir))
                    if findings:
                        return outcome(GradeStatus.TAMPERED, "the episode changed what the verifier runs on",
                                       findings=findings)
                session = await self.host.open_image(
                    image, workdir=workdir, user=task.verifier_user, limits=self.limits(task, task.verifier_timeout_s),
                    ro_mounts=((str(task.tests_dir), TESTS_DIR),), env={**task.environment_env, **task.verifier_env},
                    below=state, tmpfs=(VERIFIER_DIR,))
            except (SandboxError, OSError) as exc:
                return outcome(GradeStatus.SANDBOX_ERROR, str(exc))
            try:
                if state is None and diff.strip():
                    error = await self.host.apply_diff(session, diff)
                    if error:
                        return outcome(GradeStatus.APPLY_FAILED, f"the diff does not apply: {error[-500:]}")
                run, survivors = await session.exec_counting_survivors(f"exec bash {TESTS_DIR}/test.sh",
                                                                       timeout_s=task.verifier_timeout_s)
                log = (run.stdout + run.stderr)[-4000:]
                unfinished = _unfinished(run, survivors, task.verifier_timeout_s)
                if unfinished:
                    return outcome(GradeStatus.UNRESOLVED, "the verifier did not finish: no reward taken",
                                   findings=unfinished, log_tail=log)
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


def _unfinished(run: ExecResult, survivors: list[str], timeout_s: float) -> list[str]:
    """Why a verifier's run gives no reward: it did not end on its own with status 0, or some
    process was still there when it ended (it could have written the reward after test.sh)."""
    if run.timed_out:
        return [f"test.sh ran past its {timeout_s:.0f} s"]
    why = [f"test.sh was killed by signal {run.signal}"] if run.signal else []
    if run.exit_code not in (0, None):
        why.append(f"test.sh exited {run.exit_code}")
    if survivors:
        why.append(f"processes outlived test.sh (a verifier must stop what it starts): {', '.join(survivors[:8])}")
    return why


def _mount_points(workdir: str) -> list[str]:
    """Where a verifier's sandbox mounts (``image_session.image_argv``): no link may lead there."""
    ours = [dst for _, dst in image_session.host_python()[1]]
    return ["/proc", "/dev/shm", "/tmp", "/etc/hosts", TESTS_DIR, VERIFIER_DIR, workdir, isolation.INSIDE_DIR,
            PYC_INSIDE, *ours]


async def _read(session: Session, path: str) -> bytes | None:
    try:
        return await session.read_file(path, max_bytes=_REWARD_BYTES)
    except EditRejected:  # no such file (or not a regular one)
        return None

