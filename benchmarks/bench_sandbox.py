"""Sandbox engine benchmark: isolated engine vs a naive unisolated baseline, in the same run.

Prints (a) hello-world Python latency p50/p95, (b) test cases per second for a 20-case trivial
stdin problem with 8 concurrent submitters, (c) overhead per test case beyond the program's own
CPU time, (d) the naive baseline (`subprocess.run([python3, file])` per test, no isolation) on the
same workload and the ratio. Not a test: run it by hand on an otherwise idle machine.

    python benchmarks/bench_sandbox.py [--slots N] [--seconds S] [--isolation bwrap|none]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time

from coderl.sandbox import Engine, Limits, Program
from coderl.sandbox.pythonenv import sandbox_python

SOURCE = "a, b = map(int, input().split())\nprint(a + b)\n"
INPUTS = [f"{i} {i * 7}\n".encode() for i in range(20)]
EXPECTED = [f"{i + i * 7}\n".encode() for i in range(20)]
LIMITS = Limits(cpu_s=2, wall_s=4, memory_mb=256)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def latency(engine: Engine, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        ex = await engine.execute(Program("python", 'print("hello, world")'), [b""], LIMITS)
        out.append(time.perf_counter() - t)
        assert ex.results[0].stdout == b"hello, world\n"
    return out


async def throughput(engine: Engine, clients: int, seconds: float) -> tuple[float, float, float]:
    """(test cases/s, mean wall per case, mean program cpu per case) with `clients` submitters."""
    done = 0
    cpu = wall = 0.0
    stop_at = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal done, cpu, wall
        while time.perf_counter() < stop_at:
            ex = await engine.execute(Program("python", SOURCE), INPUTS, LIMITS)
            assert [r.stdout for r in ex.results] == EXPECTED, ex.results[0]
            done += len(ex.results)
            cpu += sum(r.cpu_s for r in ex.results)
            wall += sum(r.wall_s for r in ex.results)

    t = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - t
    return done / elapsed, wall / done, cpu / done


def naive_baseline(clients: int, seconds: float) -> float:
    """What a service without isolation and without a warm runner does: one python3 per test."""
    from concurrent.futures import ThreadPoolExecutor

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(SOURCE)
    stop_at = time.perf_counter() + seconds
    counts = [0] * clients

    def client(i: int) -> None:
        while time.perf_counter() < stop_at:
            for stdin, expected in zip(INPUTS, EXPECTED, strict=True):
                done = subprocess.run([sandbox_python(), fh.name], input=stdin, capture_output=True, timeout=10)
                assert done.stdout == expected
                counts[i] += 1

    t = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    os.unlink(fh.name)
    return sum(counts) / (time.perf_counter() - t)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slots", type=int, default=None)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--latency-runs", type=int, default=200)
    parser.add_argument("--isolation", choices=("bwrap", "none"), default="bwrap")
    args = parser.parse_args()
    async with Engine(slots=args.slots, isolation=args.isolation) as engine:
        await latency(engine, 10)  # warm-up
        lat = await latency(engine, args.latency_runs)
        rate, wall_per_case, cpu_per_case = await throughput(engine, args.clients, args.seconds)
    baseline = naive_baseline(args.clients, args.seconds)
    overhead_ms = (1 / rate * engine.size - cpu_per_case) * 1000
    rows = [
        ("machine", f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, isolation={args.isolation}, "
                    f"slots={engine.size}"),
        ("(a) hello-world latency p50 / p95", f"{pct(lat, 0.5) * 1000:.1f} ms / {pct(lat, 0.95) * 1000:.1f} ms"),
        ("(b) 20-case problem, test cases/s", f"{rate:.0f} /s ({args.clients} concurrent submitters)"),
        ("(c) overhead per test beyond its CPU", f"{overhead_ms:.2f} ms (slot time {1 / rate * engine.size * 1000:.2f}"
                                                 f" ms, program cpu {cpu_per_case * 1000:.2f} ms)"),
        ("(d) naive baseline (subprocess per test)", f"{baseline:.0f} test cases/s, unisolated"),
        ("    ratio coderl / naive", f"{rate / baseline:.1f}x"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
