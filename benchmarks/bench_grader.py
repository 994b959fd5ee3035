"""How fast the repository grader turns diffs into verdicts on this machine: coderl's builtin
tasks, each graded with its gold patch and with an empty one, K diffs in flight at once.

- throughput: diffs graded per second at concurrency K (the grader's own limit set to K, and K
  grades outstanding at a time), over ``--rounds`` passes of every (task, patch) pair;
- latency: p50/p90 seconds per diff, from the call to ``RepoGrader.grade`` to its result (never
  time spent queued behind the K in flight, so the numbers compare across K);
- CPU per diff in the grader's own process (the host's share; the sandboxes' is not counted);
- verdicts: every gold patch must come out ``resolved`` and every empty one not; a mismatch is
  printed, since a fast grader that is wrong measures nothing.

Snapshots and environments are made (in a fresh directory) before the clock starts, and so is each
task's pinned pytest configuration (``grading_run.locate_config``: one run of the environment's
pytest over the pristine snapshot, ~0.1-0.4 s, cached for the process): they are per task, shared
and cached, and the benchmark is about grading (in training each task is graded many times); the
time they took is printed apart. Run it on an otherwise idle machine, or beside its baseline:

    nice -n 19 python benchmarks/bench_grader.py [--concurrency 2,8] [--rounds 2]

The baseline is the grader before issue 24 (3a61f27, the layout before ``coderl/swe``), run by the
same file: ``git worktree add /tmp/bench-base 3a61f27`` and ``PYTHONPATH=/tmp/bench-base/src``
(the first line printed names the tree measured); alternate the two on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import coderl
from coderl.sandbox.session import SessionHost

try:
    from coderl.swe.grader import RepoGrader
    from coderl.swe.grading_run import locate_config, test_files
    from coderl.swe.store import RepoStore
    from coderl.swe.task import RepoTask
    from coderl.swe.task_set import build_task_set
except ModuleNotFoundError:  # the baseline (3a61f27, the grader before issue 24) has them in coderl/agent
    locate_config = None  # and pins no configuration
    from coderl.agent.grader import RepoGrader
    from coderl.agent.repo_store import RepoStore
    from coderl.agent.repo_task import RepoTask
    from coderl.agent.task_set import build_task_set


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
    builtin = {t.repo.split("/")[-1]: t for t in build_task_set(root)}
    if args.tasks - builtin.keys():
        raise SystemExit(f"bench_grader: no builtin task named {', '.join(sorted(args.tasks - builtin.keys()))}")
    tasks = [t for name, t in builtin.items() if not args.tasks or name in args.tasks]
    store = RepoStore(root / "repos", root / "cache")
    items = [(t, diff, diff == t.gold_patch) for _ in range(args.rounds) for t in tasks for diff in (t.gold_patch, "")]
    print(f"coderl from {Path(coderl.__file__).parent}")
    async with SessionHost() as host:
        for k in args.concurrency:
            grader = RepoGrader(host, store, env_cache=root / "envs", concurrency=k)
            t0 = time.perf_counter()
            for task in tasks:  # snapshots, environments, pinned configurations: made (or found) before the clock starts
                snapshot, env = await grader.prepare(task)
                if locate_config is not None:
                    locate_config(env, snapshot, tuple(test_files(task)))
            print(f"prepared {len(tasks)} tasks in {time.perf_counter() - t0:.2f} s (once per task and process)")
            cpu0 = time.process_time()
            wall, seconds, wrong = await timed_grades(grader, items, k)
            own = time.process_time() - cpu0
            q = statistics.quantiles(seconds, n=10)
            print(f"K={k}: {len(items)} diffs ({len(tasks)} tasks x gold/empty x {args.rounds}) in {wall:.2f} s: "
                  f"{len(items) / wall:.2f} diffs/s; per diff p50 {statistics.median(seconds):.2f} s, "
                  f"p90 {q[8]:.2f} s, grader process CPU {1000 * own / len(items):.0f} ms; wrong verdicts {len(wrong)}")
            for line in wrong:
                print("  wrong:", line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="2,8", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tasks", default="", type=lambda s: set(filter(None, s.split(","))),
                        help="only these builtin tasks (names, comma-separated; the baseline has "
                             "intervals,lru,roman,rpn,semver,slugify); default: all")
    asyncio.run(main(parser.parse_args()))
