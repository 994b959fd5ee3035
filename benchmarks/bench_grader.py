"""How fast the repository grader turns diffs into verdicts on this machine: coderl's builtin
tasks, each graded with its gold patch and with an empty one, K diffs in flight at once.

- throughput: diffs graded per second at concurrency K (the grader's own limit set to K, and K
  grades outstanding at a time), over ``--rounds`` passes of every (task, patch) pair;
- latency: p50/p90 seconds per diff, from the call to ``RepoGrader.grade`` to its result (never
  time spent queued behind the K in flight, so the numbers compare across K);
- verdicts: every gold patch must come out ``resolved`` and every empty one not; a mismatch is
  printed, since a fast grader that is wrong measures nothing.

Snapshots and environments are made (in a fresh directory) before the clock starts: they are
shared and cached, and the benchmark is about grading. Run it on an otherwise idle machine, or beside its baseline:

    nice -n 19 python benchmarks/bench_grader.py [--concurrency 2,8] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from coderl.sandbox.session import SessionHost
from coderl.swe.grader import RepoGrader
from coderl.swe.store import RepoStore
from coderl.swe.task import RepoTask
from coderl.swe.task_set import build_task_set


async def timed_grades(grader: RepoGrader, items: list[tuple[RepoTask, str, bool]], k: int,
                       ) -> tuple[float, list[float], list[str]]:
    """Wall seconds for all ``items`` with ``k`` in flight, seconds per diff, and the wrong verdicts."""
    gate = asyncio.Semaphore(k)
    seconds: list[float] = []
    wrong: list[str] = []

    async def one(task: RepoTask, diff: str, gold: bool) -> None:
        async with gate:
            t0 = time.perf_counter()
            result = await grader.grade(task, diff)
            seconds.append(time.perf_counter() - t0)
        if result.resolved != gold:
            wrong.append(f"{task.instance_id} ({'gold' if gold else 'empty'}): {result.status} {result.message[:120]}")

    t0 = time.perf_counter()
    await asyncio.gather(*(one(*item) for item in items))
    return time.perf_counter() - t0, seconds, wrong


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-grader-"))
    tasks = build_task_set(root)
    store = RepoStore(root / "repos", root / "cache")
    items = [(t, diff, diff == t.gold_patch) for _ in range(args.rounds) for t in tasks for diff in (t.gold_patch, "")]
    async with SessionHost() as host:
        for k in args.concurrency:
            grader = RepoGrader(host, store, env_cache=root / "envs", concurrency=k)
            for task in tasks:  # snapshots and environments: made (or found) before the clock starts
                await grader.prepare(task)
            wall, seconds, wrong = await timed_grades(grader, items, k)
            q = statistics.quantiles(seconds, n=10)
            print(f"K={k}: {len(items)} diffs ({len(tasks)} tasks x gold/empty x {args.rounds}) in {wall:.2f} s: "
                  f"{len(items) / wall:.2f} diffs/s; per diff p50 {statistics.median(seconds):.2f} s, "
                  f"p90 {q[8]:.2f} s; wrong verdicts {len(wrong)}")
            for line in wrong:
                print("  wrong:", line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="2,8", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--rounds", type=int, default=2)
    asyncio.run(main(parser.parse_args()))
