"""Real repository tasks (issue 34 item 8): what grading costs against a plain pytest, and what an
environment costs to build.

1. Grading: for each instance, the grader on its gold patch (``RepoGrader.grade``: fresh sandbox,
   diff applied, tests restored, test patch applied, our launcher and reporter, verdicts) against
   a plain ``python -m pytest -rA -p no:cacheprovider <test files>`` of the same tests in the same
   environment outside any sandbox (a clone of the snapshot, the gold and test patches applied
   with ``git apply``, the environment's ``/repo`` paths pointed at the clone with PYTHONPATH; the
   clone itself is not timed, the applies are). Alternated, ``--repeat`` times each; medians and
   their ratio.
2. Environments: per (repo, version) of the instances, a cold build into an empty environment
   cache (the snapshots linked in; uv's download cache as it is, or empty with ``--cold-uv``, then
   everything comes from PyPI) and the cached lookup after it.

    python benchmarks/bench_swe.py --rows ROWS/tasks.jsonl --repos ../shared/data/swe-bench-lite/repos \
        --cache CACHE --instances pallets__flask-4992 marshmallow-code__marshmallow-1359 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from coderl.sandbox.session import REPO, SessionHost
from coderl.swe.environment import build_env, site_packages
from coderl.swe.grader import RepoGrader
from coderl.swe.grading_run import test_files
from coderl.swe.store import RepoStore
from coderl.swe.task import RepoTask


def plain_pytest(task: RepoTask, snapshot: Path, env: Path) -> tuple[float, int]:
    """Seconds and exit status of the plain run (clone not timed)."""
    with tempfile.TemporaryDirectory(prefix="plain-") as tmp:
        work = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", str(snapshot), str(work)], check=True)
        for name, patch in (("fix", task.gold_patch), ("test", task.test_patch)):
            (Path(tmp) / f"{name}.patch").write_text(patch)
        roots = [line.strip() for pth in site_packages(env).glob("*.pth") for line in pth.read_text().splitlines()
                 if line.strip() == REPO or line.strip().startswith(REPO + "/")]
        paths = list(dict.fromkeys(str(work) + r[len(REPO):] for r in roots))
        environ = {"PATH": f"{env}/bin:/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8", "PYTHONPATH": ":".join(paths)}
        t0 = time.monotonic()
        for name in ("fix", "test"):
            subprocess.run(["git", "apply", str(Path(tmp) / f"{name}.patch")], cwd=work, check=True)
        proc = subprocess.run([str(env / "bin" / "python"), "-m", "pytest", "-rA", "-p", "no:cacheprovider",
                               *test_files(task)], cwd=work, env=environ, capture_output=True, text=True)
        return time.monotonic() - t0, proc.returncode


async def grading(tasks: list[RepoTask], store: RepoStore, cache: Path, repeat: int) -> dict:
    out = {}
    async with SessionHost() as host:
        grader = RepoGrader(host, store, env_cache=cache, concurrency=1)
        for task in tasks:
            snapshot, env = await grader.prepare(task)
            await grader.grade(task, task.gold_patch)  # warm: launcher compiled, pages cached
            plain_pytest(task, snapshot, env)
            graded, plain, statuses = [], [], set()
            for _ in range(repeat):
                result = await grader.grade(task, task.gold_patch)
                graded.append(result.wall_s)
                statuses.add(result.status.value)
                seconds, code = plain_pytest(task, snapshot, env)
                plain.append(seconds)
                statuses.add(f"plain exit {code}")
            g, p = statistics.median(graded), statistics.median(plain)
            out[task.instance_id] = {"graded_s": graded, "plain_s": [round(x, 3) for x in plain], "graded_median_s": g,
                                     "plain_median_s": round(p, 3), "ratio": round(g / p, 2), "statuses": sorted(statuses),
                                     "tests": len(task.tests)}
            print(json.dumps({task.instance_id: out[task.instance_id]}), flush=True)
    return out


def env_builds(tasks: list[RepoTask], cache: Path, cold_uv: bool) -> dict:
    out = {}
    with tempfile.TemporaryDirectory(prefix="bench-envs-") as tmp:
        fresh = Path(tmp) / "cache"
        fresh.mkdir()
        (fresh / "snapshots").symlink_to(cache / "snapshots")
        if cold_uv:
            os.environ["UV_CACHE_DIR"] = str(Path(tmp) / "uv")
        for task in {t.env.source: t for t in tasks}.values():
            t0 = time.monotonic()
            env = build_env(task.env, fresh)
            cold = time.monotonic() - t0
            t0 = time.monotonic()
            build_env(task.env, fresh)
            cached = time.monotonic() - t0
            size = sum(f.stat().st_size for f in env.rglob("*") if f.is_file() and not f.is_symlink())
            out[task.env.source] = {"repo": task.repo, "python": task.env.python, "cold_s": round(cold, 1),
                                    "cached_s": round(cached, 4), "size_mb": round(size / 2**20, 1)}
            print(json.dumps(out[task.env.source]), flush=True)
        shutil.rmtree(fresh / "envs", ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", required=True, help="task rows (`coderl data swe-bench` tasks.jsonl)")
    ap.add_argument("--repos", required=True)
    ap.add_argument("--cache", required=True, help="the cache the rows were made with (their snapshots)")
    ap.add_argument("--instances", nargs="+", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cold-uv", action="store_true", help="an empty uv cache for the cold builds (downloads)")
    ap.add_argument("--skip-envs", action="store_true")
    ap.add_argument("--out", help="write the results here (JSON)")
    args = ap.parse_args()
    rows = [json.loads(line) for line in Path(args.rows).read_text().splitlines()]
    tasks = [RepoTask.from_row(r) for r in rows if r["instance_id"] in args.instances]
    cache = Path(args.cache).resolve()
    result = {"grading": asyncio.run(grading(tasks, RepoStore(Path(args.repos).resolve(), cache), cache, args.repeat))}
    if not args.skip_envs:
        result["environments"] = env_builds(tasks, cache, args.cold_uv)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
