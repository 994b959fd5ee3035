"""The rules that turn a test's raw facts into its `RunStatus` (with the time limit's kind and
the message for run_record's `RunRecord`), and the rlimits a test process gets (stdlib only;
runs inside the slot beside runner.py and run_record.py). Pure functions of their arguments, so a
table test can hold every row of them."""

from __future__ import annotations

import resource
import signal

if __package__:  # the engine side (and the table tests) import coderl.sandbox.status_rules
    from coderl.sandbox.run_record import Limits, RunRecord, RunStatus
else:  # the runner imports it from /coderl, beside run_record.py
    from run_record import Limits, RunRecord, RunStatus  # type: ignore[no-redef]


def child_rlimits(limits: Limits, pid_namespace: bool) -> list[tuple[int, int, int]]:
    """The rlimits every test process sets on itself: (resource, soft, hard)."""
    cpu = max(1, int(limits.cpu_s + 0.999))
    fsize = limits.file_size_kb * 1024
    stack = min(limits.memory_mb, 1024) * 1024 * 1024
    rlimits = [(resource.RLIMIT_CPU, cpu, cpu + 1), (resource.RLIMIT_FSIZE, fsize, fsize),
               (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
               (resource.RLIMIT_CORE, 0, 0), (resource.RLIMIT_STACK, stack, stack)]
    if pid_namespace:  # one uid per namespace: NPROC counts this slot's processes, the runner and zygotes too
        nproc = limits.max_processes + 2
        rlimits.append((resource.RLIMIT_NPROC, nproc, nproc))
    return rlimits


def run_status(facts: dict, killed_for: str | None, limits: Limits) -> tuple[RunStatus, str | None, str]:
    """Turn a test's raw facts (``signal``, ``exit_code``, ``cpu_s``, ``memory_kb``,
    ``memory_error``) into (status, time_limit_kind, message), in isolate's order: limits first,
    then the exit."""
    sig = facts["signal"]
    if killed_for == "wall":
        return RunStatus.TIME_LIMIT, "wall", f"wall time limit {limits.wall_s} s exceeded"
    if killed_for == "output":
        return RunStatus.OUTPUT_LIMIT, None, f"stdout exceeded {limits.stdout_kb} KiB"
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and facts["cpu_s"] >= limits.cpu_s) or (
        facts["cpu_s"] > limits.cpu_s
    ):
        return RunStatus.TIME_LIMIT, "cpu", f"cpu time limit {limits.cpu_s} s exceeded"
    if killed_for == "memory" or facts["memory_error"] or facts["memory_kb"] > limits.memory_mb * 1024:
        return RunStatus.MEMORY_LIMIT, None, f"memory limit {limits.memory_mb} MiB exceeded"
    if sig == signal.SIGXFSZ:
        return RunStatus.OUTPUT_LIMIT, None, f"file size limit {limits.file_size_kb} KiB exceeded"
    if sig is not None:
        return RunStatus.RUNTIME_ERROR, None, f"killed by signal {sig} ({signal.Signals(sig).name})"
    if facts["exit_code"] != 0:
        return RunStatus.RUNTIME_ERROR, None, f"exit code {facts['exit_code']}"
    return RunStatus.OK, None, ""


def compile_record(status: RunStatus, seconds: float) -> RunRecord:
    """The record of a compile step the runner timed itself (no process of its own to measure)."""
    return RunRecord(status=status, exit_code=0 if status is RunStatus.OK else 1, cpu_s=round(seconds, 6),
                     wall_s=round(seconds, 6))
