"""Grading runs started ahead (issue 49 item 5): the grader starts its launcher before it applies the
diff, and the launcher reads nothing of the work tree until the host's go-ahead (``go_signal``);
``RepoGrader(warm=1)`` keeps one such run waiting per task graded. Shown on the real sandbox over
coderl's own task set: a run started ahead grades as a cold one does and is used once; a launcher
given no go-ahead runs nothing and ends (no record, no test); a run started ahead that no grading
takes is stopped."""

from __future__ import annotations

import asyncio

import pytest

from coderl.cache import default_cache_dir
from coderl.sandbox.session import SessionHost
from coderl.swe import grader as grader_module
from coderl.swe import grading_run
from coderl.swe.grader import RepoGrader
from coderl.swe.store import RepoStore
from coderl.swe.task_set import build_task_set


@pytest.fixture(scope="module")
def intervals(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe")
    task = next(t for t in build_task_set(root) if "intervals" in t.instance_id)
    return root, task


class CountingGrader(RepoGrader):
    """Counts the grading sandboxes started (cold ones and those started ahead)."""

    starts = 0
    go_dirs: list = []

    async def start_run(self, *args, **kw):  # type: ignore[no-untyped-def]
        self.starts += 1
        started = await super().start_run(*args, **kw)
        self.go_dirs = [*self.go_dirs, started.go.dir]
        return started


def counting(host: SessionHost, root, warm: int = 1) -> CountingGrader:  # type: ignore[no-untyped-def]
    """A grader over the task set at ``root`` with ``warm`` runs started ahead per task."""
    return CountingGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir(), warm=warm)


async def _waiting(grader: RepoGrader) -> None:
    for _ in range(1200):  # a sandbox's open: well under a second, more on a loaded machine
        if grader.ahead():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no grading run was started ahead")


def test_a_run_started_ahead_grades_as_a_cold_one_and_is_used_once(intervals):
    root, task = intervals

    async def main():
        async with SessionHost() as host:
            grader = counting(host, root)
            try:
                first = await grader.grade(task, task.gold_patch)  # cold: one start, then one ahead
                await _waiting(grader)
                assert grader.starts == 2
                empty = await grader.grade(task, "")  # takes the waiting run: no start of its own
                await _waiting(grader)
                assert grader.starts == 3, "the grading started its own sandbox instead of the one waiting"
                again = await grader.grade(task, task.gold_patch)
                await _waiting(grader)
                assert grader.starts == 4
            finally:
                await grader.aclose()
            assert grader.ahead() == 0 and not host.sessions  # every sandbox started ahead is closed
            assert len(grader.go_dirs) == 4 and not any(d.exists() for d in grader.go_dirs)  # and its go-ahead directory
            return first, empty, again

    first, empty, again = asyncio.run(main())
    assert (first.status, first.reward) == ("resolved", 1.0), first
    assert (empty.status, empty.reward) == ("unresolved", 0.0), empty  # the run ahead held nothing of the last diff
    assert (again.status, again.reward) == ("resolved", 1.0), again
    assert set(again.fail_to_pass.values()) == {"PASSED"} and again.pass_to_pass == first.pass_to_pass


def test_a_launcher_given_no_go_ahead_runs_nothing(intervals):
    root, task = intervals

    async def main():
        async with SessionHost() as host:
            grader = RepoGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir())
            snapshot, env = await grader.prepare(task)
            rootdir, inifile = grading_run.locate_config(env, snapshot, tuple(grading_run.test_files(task)))
            command, spec = grading_run.launch(task, env, rootdir, inifile)
            waited = await grader.start_run(snapshot, env, command, spec, within_s=1.0)  # never given its go-ahead
            closed = await grader.start_run(snapshot, env, command, spec, within_s=60.0)
            try:
                closed.go.close()  # the host gave the grading up
                return await waited.run, await closed.run
            finally:
                await waited.stop()
                await closed.stop()

    for run in asyncio.run(main()):
        assert (run.exit_code, run.stdout, run.timed_out) == (0, "", False), run  # no record, no pytest


def test_a_run_started_ahead_that_no_grading_takes_is_stopped(intervals, monkeypatch):
    root, task = intervals
    monkeypatch.setattr(grader_module, "WARM_IDLE_S", 1.0)

    async def main():
        async with SessionHost() as host:
            grader = CountingGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir(),
                                    warm=1)
            try:
                await grader.grade(task, task.gold_patch)
                await _waiting(grader)
                waiting = len(host.sessions)
                for _ in range(600):  # its second is up: stopped by the grader, not by its launcher's own wait
                    if not grader.ahead() and not host.sessions:
                        break
                    await asyncio.sleep(0.05)
                return waiting, grader.ahead(), len(host.sessions), [d.exists() for d in grader.go_dirs]
            finally:
                await grader.aclose()

    waiting, ahead, sessions, go_dirs = asyncio.run(main())
    assert (waiting, ahead, sessions, go_dirs) == (1, 0, 0, [False, False])


def test_a_run_expected_at_the_episodes_end_is_the_one_its_grading_takes(intervals):
    """``expect`` (called when an episode ends, before its diff is captured: ``LocalEpisodes``'
    harness runs and the service's grade route) starts a run ahead for a task never graded
    before; the grading takes it instead of starting one, and a second ``expect`` while one
    waits starts none."""
    root, task = intervals

    async def main():
        async with SessionHost() as host:
            grader = counting(host, root)
            try:
                grader.expect(task)
                await _waiting(grader)
                grader.expect(task)
                await asyncio.sleep(0.5)
                assert grader.starts == 1 and grader.ahead() == 1
                result = await grader.grade(task, task.gold_patch)
                assert grader.starts == 1, "the grading started its own sandbox instead of the one expected"
                cold = counting(host, root, warm=0)
                cold.expect(task)  # no runs ahead asked for: nothing started
                await asyncio.sleep(0.2)
                assert cold.ahead() == 0
            finally:
                await grader.aclose()
            assert grader.ahead() == 0 and not host.sessions
            return result

    result = asyncio.run(main())
    assert (result.status, result.reward) == ("resolved", 1.0), result
