"""Where the engine's time goes: CPU time and page faults per test case, by process.

Runs bench_sandbox's 20-case workload (8 concurrent submitters) and reads /proc/<pid>/stat of
every process of every slot before and after: the engine (this process), the runners, the lean
and warm zygotes, and the test processes (the zygotes' reaped children). On a VM, faults are the
stable figure: their count does not move with the host's load, their cost (about 3 us each here)
does. Not a test: run it by hand.

    python benchmarks/where_time_goes.py [--seconds S] [--isolation bwrap|none] [--prelude]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

from bench_sandbox import EXPECTED, INPUTS, LIMITS, SOURCE

from coderl.sandbox import Engine, Program

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> dict[str, float]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return {"faults": int(fields[7]), "child_faults": int(fields[8]),
            "cpu": (int(fields[11]) + int(fields[12])) / TICK, "child_cpu": (int(fields[13]) + int(fields[14])) / TICK}


def _tree(pid: int) -> list[int]:
    try:
        children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return [p for c in children for p in (c, *_tree(c))]


def _role(pid: int) -> str | None:
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    if any(a.endswith(b"runner.py") for a in argv):
        return "runner"
    if any(a.endswith(b"zygote.py") for a in argv):
        return f"zygote ({argv[-2].decode()})"
    return None


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--isolation", choices=("bwrap", "none"), default="bwrap")
    parser.add_argument("--prelude", action="store_true", help="ask for the LiveCodeBench prelude (warm zygote)")
    args = parser.parse_args()
    program = Program("python", SOURCE + ("from math import sqrt\n" if args.prelude else ""), prelude=args.prelude)
    async with Engine(slots=2, isolation=args.isolation) as engine:
        for _ in range(10):
            await engine.execute(program, INPUTS, LIMITS)
        roles = {p: r for s in engine._slots for p in _tree(s._proc.pid) if (r := _role(p))}  # noqa: SLF001
        before = {p: _stat(p) for p in roles}
        engine_before, started, done = os.times(), time.perf_counter(), 0
        stop_at = started + args.seconds

        async def submitter() -> None:
            nonlocal done
            while time.perf_counter() < stop_at:
                ex = await engine.execute(program, INPUTS, LIMITS)
                assert [r.stdout for r in ex.results] == EXPECTED, ex.results[0]
                done += len(ex.results)

        await asyncio.gather(*(submitter() for _ in range(8)))
        elapsed, engine_after = time.perf_counter() - started, os.times()
        after = {p: _stat(p) for p in roles if Path(f"/proc/{p}").exists()}
    rows: dict[str, list[float]] = {}
    for pid, role in roles.items():
        if pid not in after:
            print(f"note: {role} {pid} was replaced during the run; left out", file=sys.stderr)
            continue
        a, b = after[pid], before[pid]
        for name, cpu, faults in ((role, a["cpu"] - b["cpu"], a["faults"] - b["faults"]),
                                  ("test processes", a["child_cpu"] - b["child_cpu"],
                                   a["child_faults"] - b["child_faults"]) if role.startswith("zygote") else (None, 0, 0)):
            if name:
                row = rows.setdefault(name, [0.0, 0.0])
                row[0] += cpu
                row[1] += faults
    engine_cpu = engine_after.user + engine_after.system - engine_before.user - engine_before.system
    rows = {"engine (this process)": [engine_cpu, 0.0], **rows}
    print(f"{done / elapsed:.0f} test cases/s, {done} cases, isolation={args.isolation}, prelude={args.prelude}")
    print(f"{'per test case':<24} {'CPU us':>8} {'faults':>7}")
    for name, (cpu, faults) in rows.items():
        print(f"{name:<24} {cpu / done * 1e6:>8.0f} {faults / done:>7.0f}")
    total = sum(cpu for cpu, _ in rows.values())
    print(f"{'total':<24} {total / done * 1e6:>8.0f}    (2 CPUs x wall per case: {2 * elapsed / done * 1e6:.0f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
