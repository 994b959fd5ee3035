"""Table tests for the pure rules inside the slot: a test's raw facts -> its status (isolate's
order: wall, output, CPU, memory, file size, signal, exit), and the rlimits every test process sets."""

from __future__ import annotations

import resource
import signal

import pytest

from coderl.sandbox.result import Limits, RunStatus
from coderl.sandbox.status_rules import child_rlimits, compile_record, run_status

LIMITS = Limits(cpu_s=2.0, wall_s=4.0, memory_mb=256, stdout_kb=64, file_size_kb=128, open_files=32,
                max_processes=10)


def _facts(**changes) -> dict:
    """A clean exit's raw facts, with the row's changes."""
    return {"exit_code": 0, "signal": None, "cpu_s": 0.1, "memory_kb": 1000, "memory_error": False, **changes}


STATUS_ROWS = [
    # (row, facts, killed_for, status, time_limit_kind, message)
    ("clean exit", {}, None, "ok", None, ""),
    ("non-zero exit", {"exit_code": 3}, None, "runtime_error", None, "exit code 3"),
    ("killed by a signal", {"exit_code": None, "signal": signal.SIGSEGV}, None, "runtime_error", None,
     f"killed by signal {int(signal.SIGSEGV)} (SIGSEGV)"),
    ("wall limit", {}, "wall", "time_limit", "wall", "wall time limit 4.0 s exceeded"),
    ("wall beats cpu and memory", {"cpu_s": 9.0, "memory_kb": 10**7}, "wall", "time_limit", "wall",
     "wall time limit 4.0 s exceeded"),
    ("stdout limit", {}, "output", "output_limit", None, "stdout exceeded 64 KiB"),
    ("output beats cpu", {"cpu_s": 9.0}, "output", "output_limit", None, "stdout exceeded 64 KiB"),
    ("SIGXCPU", {"exit_code": None, "signal": signal.SIGXCPU, "cpu_s": 1.9}, None, "time_limit", "cpu",
     "cpu time limit 2.0 s exceeded"),
    ("SIGKILL at the cpu limit (hard rlimit)", {"exit_code": None, "signal": signal.SIGKILL, "cpu_s": 2.0}, None,
     "time_limit", "cpu", "cpu time limit 2.0 s exceeded"),
    ("SIGKILL under the cpu limit is not a TLE", {"exit_code": None, "signal": signal.SIGKILL, "cpu_s": 1.0}, None,
     "runtime_error", None, f"killed by signal {int(signal.SIGKILL)} (SIGKILL)"),
    ("cpu over the limit, clean exit (threads)", {"cpu_s": 2.5}, None, "time_limit", "cpu",
     "cpu time limit 2.0 s exceeded"),
    ("cpu exactly at the limit, clean exit", {"cpu_s": 2.0}, None, "ok", None, ""),
    ("cpu beats memory", {"cpu_s": 2.5, "memory_kb": 10**7}, None, "time_limit", "cpu",
     "cpu time limit 2.0 s exceeded"),
    ("killed for memory", {"exit_code": None, "signal": signal.SIGKILL}, "memory", "memory_limit", None,
     "memory limit 256 MiB exceeded"),
    ("runtime's MemoryError", {"exit_code": 1, "memory_error": True}, None, "memory_limit", None,
     "memory limit 256 MiB exceeded"),
    ("peak rss over the limit", {"memory_kb": 256 * 1024 + 1}, None, "memory_limit", None,
     "memory limit 256 MiB exceeded"),
    ("peak rss at the limit", {"memory_kb": 256 * 1024}, None, "ok", None, ""),
    ("SIGXFSZ", {"exit_code": None, "signal": signal.SIGXFSZ}, None, "output_limit", None,
     "file size limit 128 KiB exceeded"),
    ("memory beats SIGXFSZ", {"exit_code": None, "signal": signal.SIGXFSZ, "memory_error": True}, None,
     "memory_limit", None, "memory limit 256 MiB exceeded"),
]


@pytest.mark.parametrize(("facts", "killed_for", "status", "kind", "message"),
                         [row[1:] for row in STATUS_ROWS], ids=[row[0] for row in STATUS_ROWS])
def test_status_rule(facts: dict, killed_for: str | None, status: str, kind: str | None, message: str) -> None:
    got = run_status(_facts(**facts), killed_for, LIMITS)
    assert got == (status, kind, message)
    assert isinstance(got[0], RunStatus)


@pytest.mark.parametrize(("cpu_s", "soft"), [(0.1, 1), (1.0, 1), (1.001, 2), (2.0, 2), (2.5, 3)])
def test_cpu_rlimit_rounds_up_to_whole_seconds_with_a_one_second_hard_margin(cpu_s: float, soft: int) -> None:
    rlimits = {res: (s, h) for res, s, h in child_rlimits(LIMITS.replace(cpu_s=cpu_s), pid_namespace=False)}
    assert rlimits[resource.RLIMIT_CPU] == (soft, soft + 1)


@pytest.mark.parametrize(("memory_mb", "stack_mb"), [(256, 256), (1024, 1024), (4096, 1024)])
def test_stack_rlimit_is_the_memory_limit_capped_at_one_gib(memory_mb: int, stack_mb: int) -> None:
    rlimits = {res: (s, h) for res, s, h in child_rlimits(LIMITS.replace(memory_mb=memory_mb), pid_namespace=False)}
    assert rlimits[resource.RLIMIT_STACK] == (stack_mb << 20, stack_mb << 20)


@pytest.mark.parametrize(("pid_namespace", "nproc"), [(True, (12, 12)), (False, None)])
def test_fixed_rlimits_and_nproc_only_in_a_pid_namespace(pid_namespace: bool, nproc: tuple | None) -> None:
    rlimits = {res: (s, h) for res, s, h in child_rlimits(LIMITS, pid_namespace)}
    assert rlimits[resource.RLIMIT_FSIZE] == (128 * 1024, 128 * 1024)
    assert rlimits[resource.RLIMIT_NOFILE] == (32, 32)
    assert rlimits[resource.RLIMIT_CORE] == (0, 0)
    assert rlimits.get(resource.RLIMIT_NPROC) == nproc


@pytest.mark.parametrize(("status", "exit_code"), [(RunStatus.OK, 0), (RunStatus.RUNTIME_ERROR, 1)])
def test_compile_record(status: RunStatus, exit_code: int) -> None:
    record = compile_record(status, 1.2345678)
    assert (record.status, record.exit_code, record.signal) == (status, exit_code, None)
    assert record.cpu_s == record.wall_s == 1.234568
