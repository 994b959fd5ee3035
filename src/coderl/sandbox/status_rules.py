"""The rules that turn a test's raw facts into its status, and the rlimits a test process gets
(stdlib only; runs inside the slot beside runner.py). Pure functions of their arguments, so a
table test can hold every row of them."""

from __future__ import annotations

import resource
import signal


def _child_rlimits(limits: dict, pid_namespace: bool) -> list[tuple[int, int, int]]:
    """The rlimits every test process sets on itself: (resource, soft, hard)."""
    cpu = max(1, int(limits["cpu_s"] + 0.999))
    fsize = limits["file_size_kb"] * 1024
    stack = min(limits["memory_mb"], 1024) * 1024 * 1024
    rlimits = [(resource.RLIMIT_CPU, cpu, cpu + 1), (resource.RLIMIT_FSIZE, fsize, fsize),
               (resource.RLIMIT_NOFILE, limits["open_files"], limits["open_files"]),
               (resource.RLIMIT_CORE, 0, 0), (resource.RLIMIT_STACK, stack, stack)]
    if pid_namespace:  # one uid per namespace: NPROC counts this slot's processes, the runner and zygotes too
        nproc = limits["max_processes"] + 2
        rlimits.append((resource.RLIMIT_NPROC, nproc, nproc))
    return rlimits


def _status(record: dict, killed_for: str | None, limits: dict) -> str:
    """Turn the raw facts into one status, in isolate's order: limits first, then the exit."""
    sig = record["signal"]
    if killed_for == "wall":
        record["time_limit_kind"] = "wall"
        record["message"] = f"wall time limit {limits['wall_s']} s exceeded"
        return "time_limit"
    if killed_for == "output":
        record["message"] = f"stdout exceeded {limits['stdout_kb']} KiB"
        return "output_limit"
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and record["cpu_s"] >= limits["cpu_s"]) or (
        record["cpu_s"] > limits["cpu_s"]
    ):
        record["time_limit_kind"] = "cpu"
        record["message"] = f"cpu time limit {limits['cpu_s']} s exceeded"
        return "time_limit"
    if killed_for == "memory" or record["memory_error"] or record["memory_kb"] > limits["memory_mb"] * 1024:
        record["message"] = f"memory limit {limits['memory_mb']} MiB exceeded"
        return "memory_limit"
    if sig == signal.SIGXFSZ:
        record["message"] = f"file size limit {limits['file_size_kb']} KiB exceeded"
        return "output_limit"
    if sig is not None:
        record["message"] = f"killed by signal {sig} ({signal.Signals(sig).name})"
        return "runtime_error"
    if record["exit_code"] != 0:
        record["message"] = f"exit code {record['exit_code']}"
        return "runtime_error"
    return "ok"


def _compile_record(status: str, seconds: float) -> dict:
    return {"status": status, "exit_code": 0 if status == "ok" else 1, "signal": None, "cpu_s": round(seconds, 6),
            "wall_s": round(seconds, 6), "memory_kb": 0, "message": ""}
