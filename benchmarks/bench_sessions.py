"""What one agent episode costs on this machine, and how many run at once: session sandboxes over a
task of coderl's own set (full boundary, cgroups, overlay per episode).

- start: ms from ``SessionHost.open`` to a session that answered its first command (``true``),
  sequential, p50/p90; and ms to close (kill, unmount, cgroup removed);
- disk: MiB an episode writes to its own layer when it runs the task's tests once (the snapshot
  and the environment are shared, listed apart), read from the episode tmpfs's statvfs;
- concurrency: K episodes opened at once, each then running the task's test command at once;
  memory charged to each idle episode's cgroup and the wall time of the K runs.

    nice -n 19 python benchmarks/bench_sessions.py [--starts 20] [--concurrency 8,32,64]

``--remote``: the same sessions served by a real `coderl serve` (``/v1/sessions``, the client's
`RemoteSession`) on this machine, measured from a client process:

- cold start: open + first command, sequential (p50/p99), on a service without a warm pool;
- warm hand-out: the open request alone (p50/p99) and open + first command, on a service whose
  pool (``--pool``) was refilled before each open;
- exec round trip of ``true``: remote (client -> service -> sandbox) vs local (`Session.exec` in
  process), p50 of each, and the difference (the remote overhead);
- K episodes starting at once (cold service): per-episode start p50/p99 and the wall time; then
  idle, the memory charged per episode (its cgroup) and the service's own growth (RSS), and from
  both the idle episodes per GiB; then one ``true`` each at once.

    nice -n 19 python benchmarks/bench_sessions.py --remote [--starts 50] [--concurrency 16,128,512] [--pool 8]
        [--burst-pool 128]

``--burst-pool K``: K episodes starting at once on a service whose pool was filled with K first
(hand-out and open + first command, p50/p99). With ``--real-tasks`` (and ``--repos``, ``--cache``,
``--instance``): each instance's task opened cold and from a refilled warm pool, on services given
those repositories and that cache.

``--real-tasks``: a real repository's episode start beside the tiny task's (issue 34): task rows of
`coderl data swe-bench`, their ``--repos`` and ``--cache`` (the environments built there); for the
tiny task and each ``--instance`` (default sympy__sympy-24102, the biggest tree of SWE-bench Lite),
the tree's size, open + first command (``true``) and close, sequential p50/p90, and once per
of ``--episodes`` sessions the first and second ``python -c 'import <package>'`` in the task's
environment, with the snapshot's byte code (compiled once, issue 49) and without it (a pycache
prefix of the episode's own: what every episode paid before), and the diff capture of a one-line
change from the episode's upper layer beside the whole-tree comparison it replaced (medians).

    nice -n 19 python benchmarks/bench_sessions.py --real-tasks ROWS/tasks.jsonl --repos DIR --cache DIR
        [--instance ID ...] [--starts 10] [--episodes 5]

``--real-tasks ... --scale IDLE,RUNNING``: IDLE episodes of the first ``--instance`` opened at once and
left idle, RUNNING more opened beside them, each running the task's PASS_TO_PASS tests at once (open
p50/p99, peak memory per episode, the machine's available memory; issue 49).

``--issue49``: every figure of issue 49 items 3 and 5 in one run (the lead's quiet-machine command):
in process, cold open + first command (``true``), sequential p50/p90, for the builtin task, each
``--instance`` and the ``--image`` task; through a real `coderl serve` with a warm pool (``--pool``,
refilled before each open), the hand-out (the open request) and open + first command p50/p90 for the
same tasks; then `bench_grading_phases`'s graded / plain pytest ratios (``--grading`` instances,
``--repeat`` runs each). The image is unpacked from the engine into ``--image-cache`` (a fresh
temporary directory by default, removed at the end), never into ``--cache``.

    nice -n 19 python benchmarks/bench_sessions.py --issue49 --real-tasks ROWS/tasks.jsonl --repos DIR
        --cache DIR --image localhost/coderl-test/sweb.eval.pallets_1776_flask-4992:TAG [--starts 20]
        [--instance pallets__flask-4992 sympy__sympy-23117] [--image-row pallets__flask-4992]
        [--grading pallets__flask-4992 sympy__sympy-23117 pylint-dev__astroid-1333] [--repeat 3]
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
from coderl.sandbox import upper_changes
from coderl.sandbox.session import SessionHost, SessionLimits
from coderl.swe.grader import RepoGrader, test_command
from coderl.swe.grading_run import test_files
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


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(values: list[float]) -> str:
    return f"p50 {pct(values, 0.5):.1f} ms, p99 {pct(values, 0.99):.1f} ms (n={len(values)})"


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

        opens, closes = await start_costs(host, snapshot, env, args.starts)
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


async def start_costs(host: SessionHost, snapshot: Path, env: Path, n: int,
                      first: str = "true") -> tuple[list[float], list[float]]:
    """``n`` sequential episodes over ``snapshot``: ms from open to the answer of ``first``, ms to close."""
    opens, closes = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        s = await host.open(snapshot, env_dir=env, limits=LIMITS)
        await s.exec(first)
        t1 = time.perf_counter()
        await s.close()
        opens.append(1000 * (t1 - t0))
        closes.append(1000 * (time.perf_counter() - t1))
    return opens, closes


async def episode_costs(host: SessionHost, snapshot: Path, env: Path, package: str, edited: str,
                        n: int) -> tuple[list[float], list[float | int]]:
    """Medians over ``n`` episodes (ms): the first and second ``import <package>`` with the snapshot's
    byte code, then the same without it (``PYTHONPYCACHEPREFIX``: the episode compiles, as every
    episode did before issue 49); the diff capture of a one-line change from the upper layer, and
    comparing the whole tree (what it did before), and the diff's size."""
    timed: list[list[float]] = [[] for _ in range(6)]
    size = 0
    for _ in range(n):
        s = await host.open(snapshot, env_dir=env, limits=LIMITS)
        try:
            for i, prefix in enumerate(("", "PYTHONPYCACHEPREFIX=/tmp/pyc ")):
                for j in range(2):
                    t0 = time.perf_counter()
                    r = await s.exec(f"{prefix}python -c 'import {package}'")
                    timed[2 * i + j].append(1000 * (time.perf_counter() - t0))
                    assert r.ok, r.stderr
            await s.exec(f"echo '# bench' >> {edited}")
            await s._kill()
            t0 = time.perf_counter()
            diff = await host.capture_diff(s)
            timed[4].append(1000 * (time.perf_counter() - t0))
            real = upper_changes.changed_paths
            upper_changes.changed_paths = lambda *a: None  # type: ignore[assignment]  # the whole tree
            try:
                t0 = time.perf_counter()
                assert await host.capture_diff(s) == diff
                timed[5].append(1000 * (time.perf_counter() - t0))
            finally:
                upper_changes.changed_paths = real  # type: ignore[assignment]
            size = len(diff)
        finally:
            await s.close()
    med = [statistics.median(t) for t in timed]
    return med[:4], [med[4], med[5], size]


def top_package(patch: str) -> str:
    """What the gold patch's first file belongs to: ``sympy/core/x.py`` -> sympy, ``src/flask/a.py``
    -> flask, ``cipher.py`` -> cipher."""
    from coderl.swe.patch import split_diff

    parts = min(split_diff(patch)[0].paths).removeprefix("src/").split("/")
    return parts[0].removesuffix(".py")


async def real_starts(args: argparse.Namespace) -> None:
    """Episode start on real SWE-bench trees beside coderl's tiny task, same host, same limits."""
    from coderl.data.common import read_rows
    from coderl.swe.task import RepoTask

    rows = {r["instance_id"]: r for r in read_rows(args.real_tasks)}
    missing = [i for i in args.instance if i not in rows]
    if missing:
        raise SystemExit(f"--instance not in {args.real_tasks}: {', '.join(missing)}")
    root = Path(tempfile.mkdtemp(prefix="bench-sessions-"))
    cache = Path(args.cache).resolve()
    tiny = build_task_set(root)[0]
    print(f"load average at start: {os.getloadavg()}")
    async with SessionHost() as host:
        graders = (RepoGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir()),
                   RepoGrader(host, RepoStore(Path(args.repos).resolve(), cache), env_cache=cache))
        cases = [(graders[0], tiny)] + [(graders[1], RepoTask.from_row(rows[i])) for i in args.instance]
        for grader, task in cases:
            snapshot, env = await grader.prepare(task)
            files = sum(1 for p in snapshot.rglob("*") if p.is_file())
            package = top_package(task.gold_patch)
            opens, closes = await start_costs(host, snapshot, env, args.starts)
            q = statistics.quantiles(opens, n=10)
            imports, diffs = await episode_costs(host, snapshot, env, package, test_files(task)[0], args.episodes)
            print(f"{task.instance_id}: {files} files, {du_mib(snapshot):.0f} MiB tree; open + first command "
                  f"p50 {statistics.median(opens):.1f} ms, p90 {q[8]:.1f} ms ({args.starts} sequential); close p50 "
                  f"{statistics.median(closes):.1f} ms")
            print(f"  `import {package}`, median of {args.episodes} episodes: first / second {imports[0]:.0f} / "
                  f"{imports[1]:.0f} ms ({imports[0] / imports[1]:.2f}x) with the snapshot's byte code; "
                  f"{imports[2]:.0f} / {imports[3]:.0f} ms ({imports[2] / imports[3]:.2f}x) without (a pycache "
                  f"prefix of its own: the episode compiles)")
            print(f"  diff capture of a one-line change, median: {diffs[0]:.0f} ms from the upper layer, "
                  f"{diffs[1]:.0f} ms comparing the whole tree ({diffs[2]} bytes)")
    print(f"load average at the end: {os.getloadavg()}")


def slot_mib(pid: int) -> tuple[int, float]:
    """(sessions, MiB charged to them): the service's session cgroups (``slot1000NN``)."""
    total, names = 0, set()
    for base in Path("/sys/fs/cgroup").glob(f"**/coderl-{pid}-*"):
        for slot in base.glob("slot1*"):
            for name in ("memory.current", "memory.usage_in_bytes"):
                if (slot / name).is_file():
                    total += int((slot / name).read_text())
                    names.add(slot.name)
    return len(names), total / 2**20


def child_service_pid() -> int:
    """The `coderl serve` this process started (running_service's child)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == os.getpid() and b"serve" in (entry / "cmdline").read_bytes():
                    return int(entry.name)
            except (OSError, ValueError):
                continue
    raise SystemExit("the coderl serve this benchmark started is not among its children")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def timed_start(sessions, limits: SessionLimits, task: dict | None = None,  # type: ignore[no-untyped-def]
                      ) -> tuple[float, float, object]:
    """(ms to the open's answer, ms to the first command's answer, the session)."""
    t0 = time.perf_counter()
    s = await sessions.open(task, limits=limits)
    t1 = time.perf_counter()
    await s.exec("true")
    return 1000 * (t1 - t0), 1000 * (time.perf_counter() - t0), s


async def remote(args: argparse.Namespace) -> None:
    from unittest import mock

    from coderl.client import SessionService
    from coderl.server.launch import running_service

    env = {"CODERL_SESSIONS_MAX": str(max(args.concurrency) + 8), "CODERL_SESSION_LEASE_S": "600"}
    print(f"load average at start: {os.getloadavg()}")
    with mock.patch.dict(os.environ, {**env, "CODERL_SESSION_POOL": "0"}), running_service(slots=1) as url:
        pid = child_service_pid()
        async with SessionService(url, timeout_s=600) as sessions:
            await (await sessions.open(limits=LIMITS)).close()  # the first open makes the empty work tree
            starts = []
            for _ in range(args.starts):
                _, ms, s = await timed_start(sessions, LIMITS)
                starts.append(ms)
                await s.close()
            print(f"cold start (open + first command), sequential: {summary(starts)}")
            s = await sessions.open(limits=LIMITS)
            remote_rt = []
            for _ in range(args.starts * 4):
                t0 = time.perf_counter()
                await s.exec("true")
                remote_rt.append(1000 * (time.perf_counter() - t0))
            await s.close()
            local_rt = await local_exec_rt(args.starts * 4)
            print(f"exec round trip of `true`: remote p50 {pct(remote_rt, .5):.2f} ms (p99 {pct(remote_rt, .99):.2f}),"
                  f" local p50 {pct(local_rt, .5):.2f} ms (p99 {pct(local_rt, .99):.2f}); remote overhead p50 "
                  f"{pct(remote_rt, .5) - pct(local_rt, .5):.2f} ms")
            for k in args.concurrency:
                base_rss = rss_mib(pid)
                t0 = time.perf_counter()
                results = await asyncio.gather(*(timed_start(sessions, LIMITS) for _ in range(k)))
                wall = time.perf_counter() - t0
                opened = [s for _, _, s in results]
                await asyncio.sleep(1)
                n, charged = slot_mib(pid)
                grew = rss_mib(pid) - base_rss
                per = (charged + grew) / k
                t1 = time.perf_counter()
                execs = await asyncio.gather(*(s.exec("true") for s in opened))
                ran = time.perf_counter() - t1
                print(f"K={k:>3} starting at once: start {summary([ms for _, ms, _ in results])}, all open in "
                      f"{wall:.2f} s; idle: {n} cgroups, {charged / k:.2f} MiB charged + {grew / k:.2f} MiB service "
                      f"RSS per episode = {1024 / per:.0f} idle episodes per GiB; one `true` each at once in "
                      f"{ran:.2f} s ({sum(r.exit_code == 0 for r in execs)}/{k} ok); load {os.getloadavg()[0]:.1f}")
                await asyncio.gather(*(s.close() for s in opened))
    with mock.patch.dict(os.environ, {**env, "CODERL_SESSION_POOL": str(args.pool)}), \
            running_service(slots=1) as url:
        async with SessionService(url, timeout_s=600) as sessions:
            await sessions.warm(limits=LIMITS)
            handout, first = [], []
            for _ in range(args.starts):
                await wait_pool(sessions, args.pool)
                ms_open, ms, s = await timed_start(sessions, LIMITS)
                assert s.warm, "the pool was refilled before the open"
                handout.append(ms_open)
                first.append(ms)
                await s.close()
            print(f"warm pool (size {args.pool}): hand-out (the open request) {summary(handout)}; "
                  f"open + first command {summary(first)}")
    if args.burst_pool:
        await burst_from_pool(env, args.burst_pool)
    if args.real_tasks:
        await real_pool(env, args)
    print(f"load average at the end: {os.getloadavg()}")


async def real_scale(args: argparse.Namespace) -> None:
    """``--scale IDLE,RUNNING`` (issue 49): IDLE episodes of the first ``--instance`` opened at once and
    left idle, then RUNNING more opened (their open p99 under that load) and each running the task's
    PASS_TO_PASS tests at once; every open must succeed. The peak memory charged to each episode's
    cgroup (v1 ``memory.max_usage_in_bytes``, v2 ``memory.peak``) and the machine's available memory."""
    import shlex

    from coderl.data.common import read_rows
    from coderl.swe.task import RepoTask

    idle_n, running_n = args.scale
    row = {r["instance_id"]: r for r in read_rows(args.real_tasks)}[args.instance[0]]
    task = RepoTask.from_row(row)
    cache = Path(args.cache).resolve()
    print(f"load average at start: {os.getloadavg()}; {_available_mib():.0f} MiB available")
    async with SessionHost() as host:
        grader = RepoGrader(host, RepoStore(Path(args.repos).resolve(), cache), env_cache=cache)
        snapshot, env = await grader.prepare(task)
        limits = SessionLimits(episode_s=1800, exec_s=900, memory_mb=2048, max_processes=128, disk_mb=256)
        t0 = time.perf_counter()
        idle = await asyncio.gather(*(timed_open(host, snapshot, env, limits) for _ in range(idle_n)))
        print(f"{idle_n} idle episodes opened at once in {time.perf_counter() - t0:.1f} s: open "
              f"{summary([ms for ms, _ in idle])}; {_available_mib():.0f} MiB available")
        running = await asyncio.gather(*(timed_open(host, snapshot, env, limits) for _ in range(running_n)))
        print(f"{running_n} more opened beside them: open {summary([ms for ms, _ in running])}")
        # PASS_TO_PASS: the FAIL_TO_PASS tests often come with the test patch, which the tree lacks
        cmd = " ".join([task.test_cmd, *(shlex.quote(t) for t in task.pass_to_pass)])
        t1 = time.perf_counter()
        results = await asyncio.gather(*(s.exec(cmd) for _, s in running))
        ran = time.perf_counter() - t1
        peaks = [peak_mib(s) for _, s in running]
        idle_peaks = [peak_mib(s) for _, s in idle]
        print(f"{running_n} test runs at once in {ran:.1f} s (exit codes {sorted({r.exit_code for r in results})}, "
              f"{sum(r.timed_out for r in results)} timed out, {sum(r.oom_killed for r in results)} OOM); peak "
              f"per running episode p50 {pct(peaks, .5):.0f} MiB, max {max(peaks):.0f} MiB; per idle episode p50 "
              f"{pct(idle_peaks, .5):.1f} MiB; {_available_mib():.0f} MiB available; load {os.getloadavg()[0]:.1f}")
        await asyncio.gather(*(s.close() for _, s in [*idle, *running]))


async def timed_open(host: SessionHost, snapshot: Path, env: Path, limits: SessionLimits):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    s = await host.open(snapshot, env_dir=env, limits=limits)
    await s.exec("true")
    return 1000 * (time.perf_counter() - t0), s


def peak_mib(session) -> float:  # type: ignore[no-untyped-def]
    """The most memory the episode's cgroup was ever charged, in MiB."""
    cg = session.cgroup
    if cg is None:
        return float("nan")
    d = cg.dirs.get("unified") or cg.dirs["memory"]
    name = "memory.peak" if cg.version == "v2" else "memory.max_usage_in_bytes"
    return int((d / name).read_text()) / 2**20


def _available_mib() -> float:
    with open("/proc/meminfo") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("MemAvailable")) / 1024


async def real_pool(env: dict[str, str], args: argparse.Namespace) -> None:
    """A real repository's task from the warm pool (issue 49 item 3): per ``--instance``, the
    hand-out and open + first command on a service whose pool of that task was refilled before
    each open, beside the same task opened cold (pool off)."""
    from unittest import mock

    from coderl.client import SessionService
    from coderl.data.common import read_rows
    from coderl.server.launch import running_service

    rows = {r["instance_id"]: r for r in read_rows(args.real_tasks)}
    real = {**env, "CODERL_SWE_REPOS": str(Path(args.repos).resolve()), "CODERL_CACHE": str(Path(args.cache).resolve())}
    for pool in (0, args.pool):
        with mock.patch.dict(os.environ, {**real, "CODERL_SESSION_POOL": str(pool)}), running_service(slots=1) as url:
            async with SessionService(url, timeout_s=600) as sessions:
                for n, instance in enumerate(args.instance):
                    row = rows[instance]
                    await (await sessions.open(row, limits=LIMITS)).close()  # snapshot, environment, byte code
                    if pool:
                        await sessions.warm(row, limits=LIMITS)
                    handout, first = [], []
                    for _ in range(args.starts):
                        if pool:  # the pool's count is over all its tasks: those before this one stay full
                            await wait_pool(sessions, pool * (n + 1))
                        ms_open, ms, s = await timed_start(sessions, LIMITS, row)
                        assert s.warm == bool(pool), "warm only from a refilled pool"
                        handout.append(ms_open)
                        first.append(ms)
                        await s.close()
                    how = f"warm pool (size {pool})" if pool else "cold (no pool)"
                    print(f"{instance}, {how}: open request "
                          f"{summary(handout)}; open + first command {summary(first)}")


def p50_p90(values: list[float]) -> str:
    return f"p50 {pct(values, 0.5):.1f} ms, p90 {pct(values, 0.9):.1f} ms (n={len(values)})"


async def issue49(args: argparse.Namespace) -> None:
    """Issue 49 items 3 and 5 in one run (see the module's text); the temporary directories it made
    (the builtin task, a fresh image cache: ~600 MiB for the flask image) removed at the end."""
    import shutil

    made = [Path(tempfile.mkdtemp(prefix="bench-sessions-"))]
    if not args.image_cache:
        made.append(Path(tempfile.mkdtemp(prefix="bench-image-cache-")))
        args.image_cache = str(made[-1])
    try:
        await _issue49(args, made[0])
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)


async def _issue49(args: argparse.Namespace, root: Path) -> None:
    from unittest import mock

    from coderl.client import SessionService
    from coderl.data.common import read_rows
    from coderl.sandbox.image_rootfs import unpacked
    from coderl.server.launch import running_service
    from coderl.swe.task import RepoTask

    rows = {r["instance_id"]: r for r in read_rows(args.real_tasks)}
    for name in [*args.instance, args.image_row, *args.grading]:
        if name not in rows:
            raise SystemExit(f"{name} is not in {args.real_tasks}")
    cache = Path(args.cache).resolve()
    image_cache = Path(args.image_cache).resolve()
    print(f"load average at start: {os.getloadavg()}; {os.cpu_count()} CPUs")
    image = await asyncio.to_thread(unpacked, args.image, image_cache)
    image_label = f"{args.image_row} in its image"

    print("== item 3: cold open + first command (`true`), in process (SessionHost), sequential")
    async with SessionHost() as host:
        graders = (RepoGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir()),
                   RepoGrader(host, RepoStore(Path(args.repos).resolve(), cache), env_cache=cache))
        tiny = build_task_set(root)[0]
        cases = [(graders[0], tiny)] + [(graders[1], RepoTask.from_row(rows[i])) for i in args.instance]
        for grader, task in cases:
            snapshot, env = await grader.prepare(task)
            opens, _ = await start_costs(host, snapshot, env, args.starts)
            print(f"  {task.instance_id}: {p50_p90(opens)}; load {os.getloadavg()[0]:.1f}")
        await (await host.open_image(image, limits=LIMITS)).close()  # the image's pristine index, made once
        opens = []
        for _ in range(args.starts):
            t0 = time.perf_counter()
            s = await host.open_image(image, limits=LIMITS)
            await s.exec("true")
            opens.append(1000 * (time.perf_counter() - t0))
            await s.close()
        print(f"  {image_label}: {p50_p90(opens)}; load {os.getloadavg()[0]:.1f}")

    print(f"== item 3: from a warm pool (size {args.pool}, refilled before each open) through `coderl serve`")
    env = {"CODERL_SESSIONS_MAX": "64", "CODERL_SESSION_LEASE_S": "600", "CODERL_SESSION_POOL": str(args.pool)}
    services = (({**env, "CODERL_SWE_REPOS": str(Path(args.repos).resolve()), "CODERL_CACHE": str(cache)},
                 [(None, None), *((rows[i], None) for i in args.instance)]),
                ({**env, "CODERL_CACHE": str(image_cache)}, [(rows[args.image_row], {"reference": args.image})]))
    for service_env, tasks in services:
        with mock.patch.dict(os.environ, service_env), running_service(slots=1) as url:
            async with SessionService(url, timeout_s=600) as sessions:
                for n, (row, img) in enumerate(tasks):
                    label = image_label if img else row["instance_id"] if row else "the empty work tree"
                    await (await sessions.open(row, image=img, limits=LIMITS)).close()  # built / unpacked
                    await sessions.warm(row, image=img, limits=LIMITS)
                    handout, first = [], []
                    for _ in range(args.starts):
                        await wait_pool(sessions, args.pool * (n + 1), timeout_s=600)
                        t0 = time.perf_counter()
                        s = await sessions.open(row, image=img, limits=LIMITS)
                        t1 = time.perf_counter()
                        await s.exec("true")
                        first.append(1000 * (time.perf_counter() - t0))
                        handout.append(1000 * (t1 - t0))
                        assert s.warm, "the pool was refilled before the open"
                        await s.close()
                    print(f"  {label}: hand-out {p50_p90(handout)}; open + first command {p50_p90(first)}; "
                          f"load {os.getloadavg()[0]:.1f}")

    print(f"== item 5: graded / plain pytest (benchmarks/bench_grading_phases.py, medians of {args.repeat})")
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_grading_phases import measure

    tasks = [RepoTask.from_row(rows[i]) for i in args.grading]
    result = await measure(tasks, RepoStore(Path(args.repos).resolve(), cache), cache, args.repeat)
    for instance, r in result.items():
        m = r["medians"]
        print(f"  {instance}: graded {m['graded']:.2f} s, plain pytest ids {m['plain_ids']:.2f} s / files "
              f"{m['plain_files']:.2f} s: graded/plain {m['ratio graded/plain_ids']:.2f} "
              f"({m['ratio graded/plain_files']:.2f} on the files); a run started ahead (RepoGrader(warm=1)): "
              f"graded {m['graded, started ahead']:.2f} s, /plain {m['ratio graded, started ahead/plain_ids']:.2f} "
              f"({m['ratio graded, started ahead/plain_files']:.2f}); a first grading expected "
              f"{m['graded, expected']:.2f} s, /plain {m['ratio graded, expected/plain_ids']:.2f} "
              f"({m['ratio graded, expected/plain_files']:.2f}); in-session plain ids "
              f"{m['(in-session plain pytest ids)']:.2f} s; load {' / '.join(r['load'])}")
    print(f"load average at the end: {os.getloadavg()}")


async def burst_from_pool(env: dict[str, str], k: int) -> None:
    """K episodes starting at once on a service whose pool holds K ready sandboxes: the answer to a
    known burst (a GRPO step's episodes) is to pre-start it, and this is what that buys."""
    from unittest import mock

    from coderl.client import SessionService
    from coderl.server.launch import running_service

    with mock.patch.dict(os.environ, {**env, "CODERL_SESSION_POOL": str(k)}), running_service(slots=1) as url:
        async with SessionService(url, timeout_s=600) as sessions:
            await sessions.warm(limits=LIMITS)
            await wait_pool(sessions, k, timeout_s=600)
            await asyncio.sleep(1)  # the last refill's process settles
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            results = await asyncio.gather(*(timed_start(sessions, LIMITS) for _ in range(k)))
            wall = time.perf_counter() - t0
            warm = sum(bool(s.warm) for _, _, s in results)
            print(f"K={k:>3} starting at once from a pool of {k} (load {load:.1f} before): hand-out "
                  f"{summary([ms for ms, _, _ in results])}; open + first command "
                  f"{summary([ms for _, ms, _ in results])}, all in {wall:.2f} s; {warm}/{k} from the pool")
            await asyncio.gather(*(s.close() for _, _, s in results))


async def wait_pool(sessions, size: int, timeout_s: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while (await sessions.stats())["pool"]["ready"] < size:
        if time.monotonic() > deadline:
            raise SystemExit(f"the warm pool did not refill to {size} in {timeout_s:.0f} s")
        await asyncio.sleep(0.05)


async def local_exec_rt(n: int) -> list[float]:
    """``true`` in a local session, in process: the baseline of the remote round trip."""
    root = Path(tempfile.mkdtemp(prefix="bench-sessions-"))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q",
                    "--allow-empty", "-m", "empty"], check=True)
    out = []
    async with SessionHost() as host:
        s = await host.open(root, limits=LIMITS)
        for _ in range(n):
            t0 = time.perf_counter()
            await s.exec("true")
            out.append(1000 * (time.perf_counter() - t0))
        await s.close()
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--concurrency", default=None, type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--remote", action="store_true", help="sessions served by a real coderl serve")
    parser.add_argument("--pool", type=int, default=8, help="with --remote: the warm pool's size")
    parser.add_argument("--burst-pool", type=int, default=0, metavar="K",
                        help="with --remote: also K starting at once from a pool of K ready sandboxes")
    parser.add_argument("--real-tasks", metavar="TASKS", help="task rows of `coderl data swe-bench`: their "
                                                               "episode start beside the tiny task's")
    parser.add_argument("--repos", help="with --real-tasks: the mirrors or bundles the rows come from")
    parser.add_argument("--cache", help="with --real-tasks: snapshots and environments (the rows' --cache)")
    parser.add_argument("--instance", nargs="+", default=["sympy__sympy-24102"], help="with --real-tasks")
    parser.add_argument("--episodes", type=int, default=5, help="with --real-tasks: episodes per import/diff median")
    parser.add_argument("--scale", type=lambda v: tuple(int(x) for x in v.split(",")), metavar="IDLE,RUNNING",
                        help="with --real-tasks: IDLE idle episodes and RUNNING running the tests at once")
    parser.add_argument("--issue49", action="store_true", help="issue 49 items 3 and 5 in one run (needs "
                                                               "--real-tasks, --repos, --cache, --image)")
    parser.add_argument("--image", help="with --issue49: the image task's image (a reference the engine holds)")
    parser.add_argument("--image-row", default="pallets__flask-4992", help="with --issue49: the image's task row")
    parser.add_argument("--image-cache", help="with --issue49: where the image is unpacked (default: a fresh one)")
    parser.add_argument("--grading", nargs="+", default=["pallets__flask-4992", "sympy__sympy-23117",
                                                          "pylint-dev__astroid-1333"], help="with --issue49")
    parser.add_argument("--repeat", type=int, default=3, help="with --issue49: grading runs per instance")
    parsed = parser.parse_args()
    if parsed.concurrency is None:
        parsed.concurrency = [16, 128, 512] if parsed.remote else [8, 32, 64]
    if parsed.real_tasks and not (parsed.repos and parsed.cache):
        parser.error("--real-tasks needs --repos and --cache")
    if parsed.issue49:
        if not (parsed.real_tasks and parsed.repos and parsed.cache and parsed.image):
            parser.error("--issue49 needs --real-tasks, --repos, --cache and --image")
        if parsed.instance == ["sympy__sympy-24102"]:
            parsed.instance = ["pallets__flask-4992", "sympy__sympy-23117"]
        if parsed.pool == 8:
            parsed.pool = 2
        asyncio.run(issue49(parsed))
        raise SystemExit(0)
    asyncio.run(remote(parsed) if parsed.remote else real_scale(parsed) if parsed.real_tasks and parsed.scale
                else real_starts(parsed) if parsed.real_tasks else main(parsed))
