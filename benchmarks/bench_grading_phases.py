"""Where a repository grading's time goes (issue 49 item 5), step by step, against plain pytest on
the same tests in the same environment.

For each instance, ``--repeat`` times (alternated, medians printed):

- ``graded``: ``RepoGrader.grade`` on the gold patch, whole (what training pays per diff), every
  grading started cold (a fresh sandbox opened, its launcher started while the diffs are applied);
- ``graded, started ahead``: the same with ``RepoGrader(warm=1)``, whose grading sandbox and
  launcher (interpreter, pytest, the runner's modules and the environment's required modules
  imported: ``swe.preimports``) were started after the task's last grading and wait for the
  go-ahead (a GRPO group grades one task several times);
- ``graded, expected``: a task's first grading on a fresh ``RepoGrader(warm=1)`` whose ``expect``
  was called ``EXPECT_LEAD_S`` before (what an episode's end does while its diff is captured);
- the grader's steps done one by one in one fresh session, each timed: the host's lookups
  (snapshot, base tree, environment, pinned configuration, spec), the sandbox open with the
  launcher started, the gold patch applied, the protected files restored and the test patch
  applied (one sandbox, ``session_diffs.apply_then``), the upper layer's byte code check, the
  launcher's run from its go-ahead with the snapshot's byte code (supervisor, pristine compile of
  the test files or its host-side cache, ``swe.pristine_cache``, collection, the tests, records), the records read back (``verdicts.decide``) and the close; the launcher's run again,
  whole (interpreter, imports: not started ahead), and with its byte code compiled afresh (the
  grader before issue 49 item 5);
- inside that session, after the grading run: the interpreter's floor (``python -c pass``), the
  launcher with ``--collect-only`` and the snapshot's byte code (everything but the tests: the
  launcher's checks, pytest's start, collection), and plain ``python -m pytest`` on
  the test ids and on the test files (the session's work tree: the snapshot's byte code beside the
  sources, what an agent's own test run gets);
- ``plain``: ``python -m pytest -rA -p no:cacheprovider`` outside any sandbox, on a clone of the
  snapshot with the patches applied (``bench_swe.plain_pytest``; the clone not timed, the applies
  are), on the test ids (``plain_ids``) and on the test files (``plain_files``, what SWE-bench's
  harness runs), each on a fresh clone (no byte code of the project: it compiles what it imports).

    nice -n 19 python benchmarks/bench_grading_phases.py --rows ROWS/tasks.jsonl \
        --repos ../shared/data/swe-bench-lite/repos --cache CACHE \
        --instances pallets__flask-4992 sympy__sympy-23117 pylint-dev__astroid-1333 --repeat 3

The load average is printed with every line (this machine is shared: read the ratios).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from coderl.sandbox import session_diffs
from coderl.sandbox.session import REPO, SessionHost
from coderl.swe.environment import site_packages
from coderl.swe.grader import RepoGrader
from coderl.swe.grading_run import test_files, written_byte_code
from coderl.swe.store import RepoStore
from coderl.swe.task import RepoTask
from coderl.swe.verdicts import decide


def plain_pytest(task: RepoTask, snapshot: Path, env: Path, targets: list[str]) -> tuple[float, int]:
    """Seconds and exit status of ``python -m pytest -rA -p no:cacheprovider TARGETS`` on a fresh
    clone of the snapshot with the gold and test patches applied (the clone not timed)."""
    with tempfile.TemporaryDirectory(prefix="plain-") as tmp:
        work = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", str(snapshot), str(work)], check=True)
        for name, patch in (("fix", task.gold_patch), ("test", task.test_patch)):
            (Path(tmp) / f"{name}.patch").write_text(patch)
        roots = [line.strip() for pth in site_packages(env).glob("*.pth") for line in pth.read_text().splitlines()
                 if line.strip() == REPO or line.strip().startswith(REPO + "/")]
        paths = list(dict.fromkeys(str(work) + r[len(REPO):] for r in roots))
        environ = {"PATH": f"{env}/bin:/usr/bin:/bin", "HOME": tmp, "TMPDIR": tmp, "LANG": "C.UTF-8",
                   "PYTHONPATH": ":".join(paths)}  # TMPDIR: pytest's tmp_path never cleans up /tmp/pytest-of-* of others
        t0 = time.monotonic()
        for name in ("fix", "test"):
            subprocess.run(["git", "apply", str(Path(tmp) / f"{name}.patch")], cwd=work, check=True)
        proc = subprocess.run([str(env / "bin" / "python"), "-m", "pytest", "-rA", "-p", "no:cacheprovider",
                               *targets], cwd=work, env=environ, capture_output=True, text=True)
        return time.monotonic() - t0, proc.returncode


def timer() -> callable:  # type: ignore[valid-type]
    t = [time.monotonic()]

    def lap() -> float:
        now = time.monotonic()
        dt, t[0] = now - t[0], now
        return round(dt, 3)
    return lap


async def steps(grader: RepoGrader, task: RepoTask) -> dict[str, float]:
    """The grader's steps one by one (the gold patch; the task's tests restored as ``_grade`` does)."""
    out: dict[str, float] = {}
    lap = timer()
    plan = await grader._plan(task)  # what ``_grade`` runs: snapshot, environment, command, spec (cached
    assert not isinstance(plan, str), plan  # pristine compilation, the modules imported ahead), base blobs
    snapshot, env, command, planned = plan.how
    base, inifile = plan.base, plan.inifile

    def launch_run() -> tuple[str, dict]:  # the grader's command and spec, a nonce of its own each run
        return command, {**planned, "nonce": secrets.token_hex(32)}

    command, spec = launch_run()
    out["host lookups"] = lap()
    started = await grader.start_run(snapshot, env, command, spec, 240.0)
    session = started.session
    out["open (the launcher started, preparing)"] = lap()
    try:
        assert await session_diffs.apply_then(grader.host, session, task.gold_patch, [inifile] if inifile else [],
                                              task.test_patch) == ("", "")
        out["gold apply, restore, test patch apply"] = lap()
        assert not written_byte_code(session.layer.upper)
        out["byte code check"] = lap()
        started.go.send({"byte_code": "pristine"})
        run = await started.run
        out["launcher run after its go-ahead"] = lap()
        verdict = decide(run, spec["nonce"], task.fail_to_pass, task.pass_to_pass, base)
        out["records read-back"] = lap()
        assert verdict.status.value == "resolved", verdict
        _, fresh = launch_run()
        run = await session.exec(command, timeout_s=600, stdin=json.dumps({**fresh, "byte_code": "pristine"}).encode())
        out["(launcher run whole, not started ahead)"] = lap()
        assert decide(run, fresh["nonce"], task.fail_to_pass, task.pass_to_pass, base).status.value == "resolved"
        _, fresh = launch_run()
        run = await session.exec(command, timeout_s=600, stdin=json.dumps(fresh).encode())
        out["(launcher run, byte code compiled afresh: before)"] = lap()
        assert decide(run, fresh["nonce"], task.fail_to_pass, task.pass_to_pass, base).status.value == "resolved"
        floor = await session.exec(f"exec {shlex.quote(str(env / 'bin' / 'python'))} -I -S -c pass", timeout_s=60)
        assert floor.exit_code == 0
        out["(python -c pass)"] = lap()
        _, collect = launch_run()
        collect = {**collect, "args": [*collect["args"], "--collect-only", "-q"], "byte_code": "pristine"}
        await session.exec(command, timeout_s=600, stdin=json.dumps(collect).encode())
        out["(launcher --collect-only)"] = lap()
        py = shlex.quote(str(env / "bin" / "python"))
        for name, targets in (("ids", list(task.tests)), ("files", test_files(task))):
            plain = await session.exec(f"cd {REPO} && exec {py} -m pytest -rA -p no:cacheprovider -q "
                                       + " ".join(shlex.quote(t) for t in targets), timeout_s=600)
            out[f"(in-session plain pytest {name})"] = lap()
            if plain.exit_code not in (0, 1):
                out[f"(in-session plain pytest {name} exit)"] = plain.exit_code
    finally:
        await started.stop()
    out["close"] = lap()
    return out


async def settled(grader: RepoGrader) -> None:
    """Until a run started ahead waits (``RepoGrader(warm=1)``) and has had time to prepare, so that
    its start does not run beside the next measurement."""
    for _ in range(600):
        if grader.ahead():
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)


EXPECT_LEAD_S = 0.15  # an episode's end to its grading: the diff's capture (flask-4992 and sympy-23117: 0.1-0.2 s)


async def expected(warm: RepoGrader, task: RepoTask) -> float:
    """A task's first grading on a grader with runs started ahead, ``expect``-ed when its episode
    ended and graded once its diff is captured (``EXPECT_LEAD_S`` later): a fresh grader each time."""
    grader = RepoGrader(warm.host, warm.store, env_cache=warm.env_cache, concurrency=1, warm=1)
    try:
        grader.expect(task)
        await asyncio.sleep(EXPECT_LEAD_S)
        graded = await grader.grade(task, task.gold_patch)
    finally:
        await grader.aclose()
    assert graded.status.value == "resolved", graded
    return graded.wall_s


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


async def measure(tasks: list[RepoTask], store: RepoStore, cache: Path, repeat: int) -> dict:
    result = {}
    async with SessionHost() as host:
        grader = RepoGrader(host, store, env_cache=cache, concurrency=1)
        warm = RepoGrader(host, store, env_cache=cache, concurrency=1, warm=1)
        try:
            for task in tasks:
                result[task.instance_id] = await _measure(grader, warm, task, cache, repeat)
                print(json.dumps({task.instance_id: result[task.instance_id]}), flush=True)
        finally:
            await warm.aclose()
    return result


async def _measure(grader: RepoGrader, warm: RepoGrader, task: RepoTask, cache: Path, repeat: int) -> dict:
    snapshot, env = await grader.prepare(task)
    await grader.grade(task, task.gold_patch)  # warm: launcher compiled, configuration located, pages cached
    await warm.grade(task, task.gold_patch)  # its first grading starts cold; one run is started ahead after it
    await settled(warm)
    rows: dict[str, list[float]] = {}
    loads = []
    for _ in range(repeat):
        loads.append(load())
        graded = await grader.grade(task, task.gold_patch)
        assert graded.status.value == "resolved", graded
        rows.setdefault("graded", []).append(graded.wall_s)
        graded = await warm.grade(task, task.gold_patch)
        assert graded.status.value == "resolved", graded
        rows.setdefault("graded, started ahead", []).append(graded.wall_s)
        await settled(warm)
        rows.setdefault("graded, expected", []).append(await expected(warm, task))
        for name, value in (await steps(grader, task)).items():
            rows.setdefault(name, []).append(value)
        for name, targets in (("plain_ids", list(task.tests)), ("plain_files", test_files(task))):
            seconds, code = plain_pytest(task, snapshot, env, targets)
            assert code in (0, 1), (name, code)
            rows.setdefault(name, []).append(round(seconds, 3))
    medians = {k: round(statistics.median(v), 3) for k, v in rows.items()}
    for graded in ("graded", "graded, started ahead", "graded, expected"):
        for plain in ("plain_ids", "plain_files"):
            medians[f"ratio {graded}/{plain}"] = round(medians[graded] / medians[plain], 2)
    return {"medians": medians, "runs": rows, "tests": len(task.tests), "load": loads}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", required=True, help="task rows (`coderl data swe-bench` tasks.jsonl)")
    ap.add_argument("--repos", required=True)
    ap.add_argument("--cache", required=True, help="the cache the rows were made with (their snapshots, environments)")
    ap.add_argument("--instances", nargs="+", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", help="write the results here (JSON)")
    args = ap.parse_args()
    rows = [json.loads(line) for line in Path(args.rows).read_text().splitlines()]
    tasks = [RepoTask.from_row(r) for r in rows if r["instance_id"] in args.instances]
    cache = Path(args.cache).resolve()
    result = asyncio.run(measure(tasks, RepoStore(Path(args.repos).resolve(), cache), cache, args.repeat))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
