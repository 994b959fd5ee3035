"""The repository grader: an agent's diff, applied in a FRESH sandbox from the pristine snapshot, judged
by the task's FAIL_TO_PASS and PASS_TO_PASS tests.

Steps (as the SWE-bench harness, on our sandbox instead of Docker):
1. the snapshot of (repo, base commit) and the task's environment, made once and shared; on the
   host, from the pristine snapshot: the pytest configuration the run is pinned to
   (``grading_run.locate_config``) and the base commit's blob ids (``grading_run.base_tree``);
2. the diff read on the host (``patch.without_files``): the sections touching the task's test
   files, the test patch's files or any ``conftest.py`` are dropped (the files stay as the base
   commit has them; the dropped paths are reported as ``tests_touched``, reward-hack telemetry);
3. a fresh session (nothing of the agent's episode is in it), the rest of the diff applied
   (every task kind's one policy, ``session_diffs``: ``git apply``, then SWE-bench's ``patch
   --fuzz=5``), the dropped files and the pinned configuration file checked out from the base
   commit, then the task's test patch (all three in one sandbox beside the session,
   ``session_diffs.apply_then``; byte code the diff wrote removed after);
4. our launcher runs pytest (``coderl/swe/pytest_inside``: configuration pinned, clean
   ``sys.path`` and environment, start-up hooks off, a supervisor outside the test process), and
   the verdicts come from our reporter plugin's records (``verdicts.decide``), never from the log,
   which stays in the result for people. Reward 1 only when every FAIL_TO_PASS and PASS_TO_PASS
   test passed and the records are consistent. A task whose command is Django's
   ``tests/runtests.py`` runs that instead, every file under ``tests/`` the base commit's, its
   records taken from the standard library's unittest (``django_run``, ``unittest_verdicts``).
   The environment's test services (``EnvSpec.services``) are started in the same command, inside
   the sandbox, before pytest (``grading_run.start_services``).

Outcomes (`GradeStatus`) are kept apart by who is at fault: ``resolved`` / ``unresolved`` (tests ran; reward 1/0),
``tampered`` (the run's records are inconsistent in a way only a patch working against the grader
makes them: a forged record, a report that disagrees with the call, a changed test module,
conftest or plugin, a replaced pytest function, an exit status that disagrees with the failures;
reward 0, ``findings`` say what), ``apply_failed`` (the agent's diff does not apply or cannot be
read; reward 0) and ``sandbox_error`` (no repository, no environment or no pytest in it, the
sandbox failed, the task's own test patch does not apply, the repository is the test runner itself
(``grading_run.runner_repository``: pytest's own rows); reward None: retry or drop the sample,
never score it). docs/agent.md lists the attacks and what answers each.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shlex
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from coderl.errors import SandboxError
from coderl.sandbox import session_diffs
from coderl.sandbox.session import Session, SessionHost, SessionLimits
from coderl.swe import build_products, django_run, preimports, pristine_cache
from coderl.swe.bytecode import compile_snapshot
from coderl.swe.django_run import runs_django
from coderl.swe.environment import EnvBuildError, build_env
from coderl.swe.go_signal import GoSignal
from coderl.swe.grade_status import GradeResult, GradeStatus
from coderl.swe.grading_run import (
    INSIDE_DIR,
    base_tree,
    launch,
    locate_config,
    runner_repository,
    service_failed,
    test_files,
    written_byte_code,
)
from coderl.swe.patch import MalformedDiff, without_files
from coderl.swe.store import RepoStore, RepoUnavailable
from coderl.swe.task import InvalidTask, RepoTask
from coderl.swe.unittest_verdicts import decide_unittest
from coderl.swe.verdicts import RunVerdicts, decide

# 16 MiB per stream: the reporter's records take about 1 KiB per FAIL_TO_PASS / PASS_TO_PASS test,
# so some 15,000 fit (a run whose records are cut is unresolved, never scored on part of them)
DEFAULT_GRADE_LIMITS = SessionLimits(episode_s=900.0, exec_s=600.0, memory_mb=4096, max_processes=512,
                                     output_kb=16384)


_GO_DIR = "grading-go"  # under the environment cache: each grading run's go-ahead directory (``go_signal``)
_APPLIES_S = 240.0  # the applies' own bound (two runs of at most 120 s each) before the launcher's go-ahead
WARM_IDLE_S = 60.0  # a grading run started ahead (``RepoGrader(warm=...)``) is used within this, else stopped
WARM_TASKS = 8  # the tasks (the most recently graded) a grader keeps runs started ahead for

Outcome = Callable[..., GradeResult]  # outcome(status, message="", **fields): a result for the task being graded


async def timed_grading(task: RepoTask, diff: str,
                        steps: Callable[[str, list[str], Outcome], Awaitable[GradeResult]]) -> GradeResult:
    """What every repository grader (this module's, ``image_grader``'s) does around its own ``steps``:
    the diff split on the host into the part applied and the protected files it touched (an
    unreadable diff is the agent's ``apply_failed``, before a sandbox is spent on it); ``outcome``,
    which pairs a status with its own reward, so no grader can score a status otherwise; and the
    wall time of the whole grading, queue and builds included."""
    t0 = time.monotonic()

    def outcome(status: GradeStatus, message: str = "", **kw: object) -> GradeResult:
        return GradeResult(instance_id=task.instance_id, status=status, reward=status.reward, message=message, **kw)

    try:
        kept, touched = without_files(diff, task.protected_files)
    except MalformedDiff as exc:
        result = outcome(GradeStatus.APPLY_FAILED, f"unreadable diff: {exc}")
    else:
        result = await steps(kept, touched, outcome)
    return replace(result, wall_s=round(time.monotonic() - t0, 3))


def test_command(task: RepoTask) -> str:
    """The task's command as a person runs it, followed by the files of its ``file::name`` tests
    (the grader itself runs them through its launcher)."""
    return " ".join([task.test_cmd, *(shlex.quote(f) for f in test_files(task))])


@dataclass(eq=False)
class StartedRun:
    """A grading sandbox whose launcher is started and waits for its go-ahead (``go_signal``): the
    launcher's command in flight (``run``), the spec it was given (its nonce), when it was made."""

    session: Session
    go: GoSignal
    run: asyncio.Task
    spec: dict
    made: float
    env: Path | None = None

    async def stop(self) -> None:
        """The go-ahead closed (a launcher still waiting stops), the sandbox closed, the command's end collected."""
        self.go.close()
        await self.session.close()
        await asyncio.gather(self.run, return_exceptions=True)


@dataclass(eq=False)
class _Plan:
    """What every grading of one task runs: the snapshot, the environment, the launcher's command
    and spec (its nonce fresh per run), the base commit's blobs, how the records are read, the
    pinned configuration file (restored with the protected files), whether it is Django's runner."""

    snapshot: Path
    env: Path
    command: str
    spec: dict
    base: dict[str, str]
    decide: Callable[..., RunVerdicts]
    inifile: str | None
    django: bool = False

    @property
    def key(self) -> tuple:
        """Runs started ahead are kept under this: all but the nonce."""
        return (str(self.snapshot), str(self.env), self.command,
                json.dumps({k: v for k, v in self.spec.items() if k != "nonce"}, sort_keys=True))

    @property
    def how(self) -> tuple[Path, Path, str, dict]:
        return self.snapshot, self.env, self.command, self.spec


class RepoGrader:
    """Grades diffs against repository tasks; ``concurrency`` fresh sandboxes at a time."""

    def __init__(self, host: SessionHost, store: RepoStore, *, env_cache: Path, find_links: Path | None = None,
                 limits: SessionLimits = DEFAULT_GRADE_LIMITS, concurrency: int = 2,
                 gate: asyncio.Semaphore | None = None, warm: int = 0) -> None:
        """``gate``: a bound shared with other graders (`coderl.swe.episodes`), else ``concurrency`` of its own.
        ``warm``: grading runs kept started ahead per task once the task has been graded (a GRPO
        group grades one task several times): a fresh sandbox with the launcher's interpreter,
        pytest and the runner imported, waiting for its go-ahead, handed out once (``StartedRun``),
        for the ``WARM_TASKS`` tasks graded last, each used within ``WARM_IDLE_S`` or stopped. The
        same work as a grading started cold, done off the grading's path; ``aclose`` stops them. With
        ``warm``, a grading's sandbox is also closed after its result is returned (the gate held
        until it is): ``aclose`` waits for those too."""
        self.host, self.store = host, store
        self.env_cache, self.find_links = env_cache, find_links
        self.limits = limits
        self._gate = gate or asyncio.Semaphore(concurrency)
        self.warm = warm
        self._ahead: OrderedDict[tuple, list[StartedRun]] = OrderedDict()
        self._filling: set[asyncio.Task] = set()
        self._compiling: set[tuple] = set()  # protected files being compiled into the host's cache
        self._preimport: dict[Path, tuple[str, ...]] = {}  # environment -> its modules a run imports ahead
        self._probing: set[Path] = set()

    async def aclose(self) -> None:
        """Stop the grading runs started ahead (``warm``), and their refills."""
        self.warm = 0
        while self._filling:  # starts and stops under way (a start is an open, bounded)
            await asyncio.gather(*list(self._filling), return_exceptions=True)
        ahead = [started for runs in self._ahead.values() for started in runs]
        self._ahead.clear()
        await asyncio.gather(*(started.stop() for started in ahead), return_exceptions=True)

    async def grade_many(self, items: list[tuple[RepoTask, str]]) -> list[GradeResult]:
        return list(await asyncio.gather(*(self.grade(task, diff) for task, diff in items)))

    async def prepare(self, task: RepoTask) -> tuple[Path, Path]:
        """The task's snapshot and environment for an episode (built now when missing, off the event
        loop), the snapshot's byte code compiled for the environment's Python (``swe.bytecode``: an
        episode's first import compiles nothing)."""
        snapshot, env = await self._built(task)
        await asyncio.to_thread(compile_snapshot, snapshot, env)
        return snapshot, env

    async def _built(self, task: RepoTask) -> tuple[Path, Path]:
        """The snapshot and environment alone: a grading run never reads a work tree's byte code."""
        snapshot = await asyncio.to_thread(self.store.snapshot, task.repo, task.base_commit)
        env = await asyncio.to_thread(build_env, task.env, self.env_cache, find_links=self.find_links)
        return snapshot, env

    async def grade(self, task: RepoTask, diff: str) -> GradeResult:
        return await timed_grading(task, diff, partial(self._grade, task))

    async def _plan(self, task: RepoTask) -> _Plan | str:
        """What every grading of ``task`` runs (the diff aside), or why the task cannot be graded.
        Raises ``RepoUnavailable``, ``EnvBuildError``, ``InvalidTask``."""
        snapshot = await asyncio.to_thread(self.store.snapshot, task.repo, task.base_commit)
        base = await asyncio.to_thread(base_tree, snapshot)
        if runs_django(task):  # tests/runtests.py: every file under tests/ is the runner's
            snapshot, env = await self._built(task)
            command, spec = django_run.launch(task, env)
            return _Plan(snapshot, env, command, spec, base, decide_unittest, None, django=True)
        ungradable = runner_repository(base)
        if ungradable:
            return ungradable
        snapshot, env = await self._built(task)
        base = {**base, **build_products.blob_ids(env)}  # a compiled project's modules: the base's
        rootdir, inifile = await asyncio.to_thread(locate_config, env, snapshot, tuple(test_files(task)))
        command, spec = launch(task, env, rootdir, inifile)
        cache = pristine_cache.cache_dir(self.env_cache, env, task)  # the protected files' compilation
        spec = {**spec, "pristine_cache": str(cache)} if cache is not None else spec
        ahead = await self._preimports(snapshot, env)  # the required distributions' modules
        spec = {**spec, "preimport": list(ahead)} if ahead else spec
        return _Plan(snapshot, env, command, spec, base, decide, inifile)

    def expect(self, task: RepoTask) -> None:
        """A grading of ``task`` is coming (its episode has ended and its diff is being captured):
        with ``warm``, a run is started ahead for it now, in the background, so that its start
        overlaps the capture, for a task graded first as for one graded before; a run already
        waiting for it is kept, not doubled."""
        if self.warm:
            self._background(self._expect(task))

    async def _expect(self, task: RepoTask) -> None:
        try:
            plan = await self._plan(task)
        except (RepoUnavailable, EnvBuildError, InvalidTask):
            return  # its grading says why
        if isinstance(plan, _Plan):
            self._refill(plan.key, plan.how)

    async def _grade(self, task: RepoTask, kept: str, touched: list[str], outcome: Outcome) -> GradeResult:
        try:
            plan = await self._plan(task)
        except (RepoUnavailable, EnvBuildError, InvalidTask) as exc:
            return outcome(GradeStatus.SANDBOX_ERROR, str(exc), tests_touched=touched)
        if isinstance(plan, str):
            return outcome(GradeStatus.SANDBOX_ERROR, plan, tests_touched=touched)
        if plan.django:
            kept, runner_files = without_files(kept, frozenset(django_run.runner_paths(kept)))
            touched = sorted({*touched, *runner_files})
            restore = touched
        else:
            restore = sorted({*touched, *([plan.inifile] if plan.inifile else [])})
        snapshot, env, command, spec = plan.how
        key = plan.key
        await self._gate.acquire()
        held = True  # the gate, until the grading's sandbox is closed
        try:
            started = self._take(key)
            try:
                started = started or await self.start_run(snapshot, env, command, spec, _APPLIES_S)
            except SandboxError as exc:
                return outcome(GradeStatus.SANDBOX_ERROR, str(exc), tests_touched=touched)
            plain = {k: v for k, v in spec.items() if k != "preimport"}
            restart = partial(self.start_run, snapshot, env, command, {**plain, "nonce": secrets.token_hex(32)}, _APPLIES_S)
            try:
                return await self._run(task, started, kept, touched, restore, (plan.base, plan.decide), outcome, restart)
            except SandboxError as exc:
                return outcome(GradeStatus.SANDBOX_ERROR, str(exc), tests_touched=touched)
            finally:
                if self.warm:  # closed off the grading's path (``aclose``, which runs started ahead need, waits)
                    held = False
                    self._background(self._stop(started, key, plan.how))
                else:
                    await started.stop()
        finally:
            if held:
                self._gate.release()

    async def _stop(self, started: StartedRun, key: tuple, how: tuple[Path, Path, str, dict]) -> None:
        """A grader with runs started ahead: the grading's sandbox closed, the gate released, the task's runs refilled."""
        try:
            await started.stop()
        finally:
            self._gate.release()
            if self.warm:
                self._refill(key, how)

    async def start_run(self, snapshot: Path, env: Path, command: str, spec: dict, within_s: float) -> StartedRun:
        """A fresh grading sandbox with its launcher started: it prepares (``launcher.prepare``) and
        waits up to ``within_s`` for its go-ahead (``go_signal``); its limit counts from now, so it
        gets that wait on top of the run's."""
        go = GoSignal(self.env_cache / _GO_DIR)
        try:
            cache = [spec["pristine_cache"]] if spec.get("pristine_cache") else []  # this task's alone
            session = await self.host.open(snapshot, env_dir=env, limits=self.limits,
                                           ro_binds=[str(INSIDE_DIR), str(go.dir), *cache])
        except BaseException:
            go.close()
            raise
        run = asyncio.create_task(session.exec(command, timeout_s=self.limits.exec_s + within_s, stdin=json.dumps(
            {**spec, "go": str(go.path), "go_within_s": within_s}).encode()))
        return StartedRun(session, go, run, spec, time.monotonic(), env)

    def ahead(self) -> int:
        """How many grading runs wait, started ahead (``warm``), over all tasks."""
        return sum(len(runs) for runs in self._ahead.values())

    def _take(self, key: tuple) -> StartedRun | None:
        """A run started ahead for ``key`` that is still waiting and young enough, handed out once."""
        runs = self._ahead.get(key, [])
        while runs:
            started = runs.pop(0)
            if not started.run.done() and time.monotonic() - started.made < WARM_IDLE_S:
                return started
            self._background(started.stop())
        return None

    def _refill(self, key: tuple, how: tuple[Path, Path, str, dict]) -> None:
        """Start runs ahead for ``key`` up to ``warm``, in the background (each with a nonce of its own)."""
        self._ahead.setdefault(key, [])
        self._ahead.move_to_end(key)
        while len(self._ahead) > WARM_TASKS:
            _, old = self._ahead.popitem(last=False)
            for started in old:
                self._background(started.stop())
        for _ in range(self.warm - len(self._ahead[key])):
            self._background(self._fill(key, how))

    async def _fill(self, key: tuple, how: tuple[Path, Path, str, dict]) -> None:
        snapshot, env, command, spec = how
        try:
            started = await self.start_run(snapshot, env, command, {**spec, "nonce": secrets.token_hex(32)},
                                        WARM_IDLE_S + _APPLIES_S)
        except SandboxError:
            return  # the next grading of the task starts cold
        runs = self._ahead.get(key)
        if runs is None:  # the task was dropped meanwhile
            await started.stop()
            return
        runs.append(started)
        started.run.add_done_callback(lambda _: self._expire(key, started))
        asyncio.get_running_loop().call_later(WARM_IDLE_S, self._expire, key, started)

    def _expire(self, key: tuple, started: StartedRun) -> None:
        """A run started ahead that no grading took within ``WARM_IDLE_S``, or whose launcher stopped
        waiting: stopped (a no-op once it was handed out)."""
        runs = self._ahead.get(key, [])
        if started in runs:
            runs.remove(started)
            self._background(started.stop())

    async def _preimports(self, snapshot: Path, env: Path) -> tuple[str, ...]:
        """The modules of ``env`` a run on ``snapshot`` imports before its go-ahead
        (``swe.preimports``): () until the environment is probed, which starts now in the
        background; less those the snapshot's tree holds a module of."""
        names = self._preimport.get(env)
        if names is None:
            names = await asyncio.to_thread(preimports.known, self.env_cache, env)
            if names is None:
                if env not in self._probing:
                    self._probing.add(env)
                    self._background(self._probe(env))
                return ()
            self._preimport[env] = names
        return await asyncio.to_thread(preimports.usable, snapshot, names) if names else ()

    async def _probe(self, env: Path) -> None:
        try:
            self._preimport[env] = await asyncio.to_thread(preimports.probe, self.env_cache, env)
        finally:
            self._probing.discard(env)

    def _compile_pristine(self, started: StartedRun) -> None:
        """The protected files as this grading's sandbox holds them now (restored, the test patch
        applied, nothing of the repository run yet) compiled into the host's cache in the background
        when it lacks them (``pristine_cache``): the next gradings of the task load them."""
        cache, layer = started.spec.get("pristine_cache"), started.session.layer
        if not cache or started.env is None or layer is None:
            return
        tree = started.session.work_tree or layer.merged
        todo = pristine_cache.missing(Path(cache), tree, started.spec["protected"], started.spec["wanted"])
        key = (cache, tuple(sorted((rel, hash(data)) for rel, data in todo.items())))
        if not todo or key in self._compiling:
            return
        self._compiling.add(key)

        async def fill() -> None:
            try:
                await asyncio.to_thread(pristine_cache.fill, started.env, Path(cache), todo, started.spec["wanted"])
            finally:
                self._compiling.discard(key)
        self._background(fill())

    def _background(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._filling.add(task)
        task.add_done_callback(self._filling.discard)

    async def _run(self, task: RepoTask, started: StartedRun, kept: str, touched: list[str], restore: list[str],
                   judge: tuple[dict[str, str], Callable[..., RunVerdicts]], outcome: Outcome,
                   restart: Callable[[], Awaitable[StartedRun]] | None = None) -> GradeResult:
        """``restart``: a fresh run importing nothing ahead, for a diff that wrote a module named
        like one this run imported ahead (``preimports.shadowed``): applied again there."""
        session, (base, decide_run) = started.session, judge
        test_patch, error = task.test_patch if task.test_patch.strip() else "", ""
        # whatever route the diff took to them, the restored files are the base commit's again; then the test
        # patch: one sandbox after the diff's own (``apply_then``), or none when the diff is empty
        if kept.strip():
            refused, error = await session_diffs.apply_then(self.host, session, kept, restore, test_patch)
            if refused:
                return outcome(GradeStatus.APPLY_FAILED, f"the diff does not apply: {refused[-500:]}", tests_touched=touched)
            written = written_byte_code(session.layer.upper)  # what the diff wrote: byte code is the snapshot's only
            if written and not error:  # removed as the restored files are (a test patch writes no byte code)
                error = await session_diffs.apply(self.host, session, "", restore=written)
        elif restore or test_patch:
            error = await session_diffs.apply(self.host, session, test_patch, restore=restore)
        if error:
            return outcome(GradeStatus.SANDBOX_ERROR, f"the task's test patch does not apply: {error[-500:]}",
                           tests_touched=touched)
        ahead = started.spec.get("preimport")
        if ahead and restart is not None and await asyncio.to_thread(preimports.shadowed, session.layer.upper, ahead):
            fresh = await restart()
            try:
                return await self._run(task, fresh, kept, touched, restore, judge, outcome)
            finally:
                await fresh.stop()
        self._compile_pristine(started)
        started.go.send({} if written_byte_code(session.layer.upper) else {"byte_code": "pristine"})
        result = await started.run
        no_service = service_failed(task, result)
        if no_service:  # the task environment's fault, before any test ran: never scored
            return outcome(GradeStatus.SANDBOX_ERROR, no_service, tests_touched=touched, log_tail=result.stderr[-4000:])
        verdict = decide_run(result, started.spec["nonce"], task.fail_to_pass, task.pass_to_pass, base)
        return outcome(verdict.status, verdict.message, fail_to_pass=verdict.fail_to_pass,
                       pass_to_pass=verdict.pass_to_pass, findings=verdict.findings, tests_touched=touched,
                       log_tail=result.stderr[-4000:])
