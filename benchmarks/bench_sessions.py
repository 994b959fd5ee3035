"""What one agent episode costs on this machine, and how many run at once: session sandboxes over a
task of coderl's own set (full boundary, cgroups, overlay per episode).

- start: ms from ``SessionHost.open`` to a session that answered its first command (``true``),
  sequential, p50/p90; and ms to close (kill, unmount, cgroup removed);
- disk: MiB an episode writes to its own layer when it runs the task's tests once (the snapshot
  and the environment are shared, listed apart), read from the episode tmpfs's statvfs;
- concurrency: K episodes opened at once, each then running the task's test command at once;
  memory charged to each idle episode's cgroup and the wall time of the K runs.

    nice -n 19 python benchmarks/bench_sessions.py [--starts 20] [--concurrency 8,32,64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from coderl.cache import default_cache_dir
from coderl.sandbox.session import SessionHost, SessionLimits
from coderl.swe.grader import RepoGrader, test_command
from coderl.swe.store import RepoStore
from coderl.swe.task_set import build_task_set

LIMITS = SessionLimits(episode_s=600, exec_s=300, memory_mb=1024, max_processes=128, disk_mb=256)


def cgroup_mib(session) -> float:  # type: ignore[no-untyped-def]
    """What the episode's cgroup is charged (its processes and its tmpfs pages), in MiB."""
    cg = session.cgroup
    if cg is None:
        return float("nan")
    name = "memory.current" if cg.version == "v2" else "memory.usage_in_bytes"
    d = cg.dirs.get("unified") or cg.dirs["memory"]
    return int((d / name).read_text()) / 2**20


def du_mib(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True).stdout.split()
    return int(out[0]) / 1024 if out else 0.0


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-sessions-"))
    task = build_task_set(root)[0]
    async with SessionHost() as host:
        grader = RepoGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir())
        snapshot, env = await grader.prepare(task)
        cmd = test_command(task)

        opens, closes = [], []
        for _ in range(args.starts):
            t0 = time.perf_counter()
            s = await host.open(snapshot, env_dir=env, limits=LIMITS)
            await s.exec("true")
            t1 = time.perf_counter()
            await s.close()
            opens.append(1000 * (t1 - t0))
            closes.append(1000 * (time.perf_counter() - t1))
        q = statistics.quantiles(opens, n=10)
        print(f"start (open + first command): p50 {statistics.median(opens):.1f} ms, p90 {q[8]:.1f} ms "
              f"({args.starts} sequential); close p50 {statistics.median(closes):.1f} ms")

        s = await host.open(snapshot, env_dir=env, limits=LIMITS)
        run = await s.exec(cmd)
        st = os.statvfs(s.layer.root)
        used = (st.f_blocks - st.f_bfree) * st.f_frsize / 2**20
        await s.close()
        print(f"disk per episode after one test run: {used:.2f} MiB (exit {run.exit_code}); shared: snapshot "
              f"{du_mib(snapshot):.2f} MiB, environment {du_mib(env):.1f} MiB")

        for k in args.concurrency:
            t0 = time.perf_counter()
            sessions = await asyncio.gather(*(host.open(snapshot, env_dir=env, limits=LIMITS) for _ in range(k)))
            opened = time.perf_counter() - t0
            await asyncio.sleep(1)
            per = statistics.mean(cgroup_mib(s) for s in sessions)
            t1 = time.perf_counter()
            runs = await asyncio.gather(*(s.exec(cmd) for s in sessions))
            ran = time.perf_counter() - t1
            ok = sum(r.exit_code == 1 for r in runs)  # the base commit: the FAIL_TO_PASS test fails
            await asyncio.gather(*(s.close() for s in sessions))
            print(f"K={k:>3}: opened in {opened:.2f} s; {per:.1f} MiB charged per idle episode (its cgroup); "
                  f"K test runs at once in {ran:.2f} s ({k / ran:.1f} runs/s), {ok}/{k} ran to the expected end")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--concurrency", default="8,32,64", type=lambda s: [int(x) for x in s.split(",")])
    asyncio.run(main(parser.parse_args()))
