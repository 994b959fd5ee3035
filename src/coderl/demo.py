"""`coderl demo`: the main job on a machine without accelerators. Starts the sandbox service, scores
real problems end to end through the HTTP client (gold solutions, broken ones, the peers' false
accepts, hostile programs, coderl's own repository tasks graded by `/v1/swe/grade`), and prints a
report of verdicts and throughput."""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from coderl.swe.grade_status import GradeStatus

HOSTILE = {
    "early exit os._exit(0)": "import os\nos._exit(0)",
    "fork bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    "memory bomb": "x = bytearray(8 << 30)",
    "infinite loop ignoring signals": "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass",
    "connect to the sandbox API": "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{port}/healthz', timeout=2)\nprint(3)",
    "read /etc/shadow": "print(open('/etc/shadow').read())",
    "frame walk for expected output": "import gc\nprint([o for o in gc.get_objects() if isinstance(o, str) and o.strip() == '3'][0])",
    "output flood": "while True:\n    print('x' * 10000)",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help="start the sandbox, score real problems end to end, print a report")
    p.add_argument("--shared", default=None, help="directory with rllm-test/ and sandboxfusion-samples/ "
                                                  "(default: ../shared/data when present)")
    p.add_argument("--slots", type=int, default=None)
    p.add_argument("--json", help="also write the report as JSON to this file")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    shared = Path(args.shared) if args.shared else _default_shared()
    if args.shared and not shared.is_dir():
        raise FileNotFoundError(f"--shared {args.shared}: not a directory")
    from coderl.server.launch import running_service

    print("building the repository tasks ...", file=sys.stderr)
    tasks = _repo_tasks()
    print("starting the sandbox service ...", file=sys.stderr)
    with running_service(slots=args.slots or os.cpu_count() or 2) as url:
        report = asyncio.run(_run(url, int(url.rsplit(":", 1)[1]), shared, tasks))
    print(_render(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0 if report["all_as_expected"] else 1


def _default_shared() -> Path | None:
    for candidate in (Path.cwd().parent / "shared" / "data", Path(__file__).resolve().parents[3] / "shared" / "data"):
        if candidate.is_dir():
            return candidate
    return None


def _problem_sets(shared: Path | None, port: int) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(name, expected outcome, submissions)."""
    sets = []
    he = _humaneval()
    sets.append(("HumanEval canonical solutions", "accepted",
                 [{"id": r["task_id"], "code": r["canonical_solution"], "tests": r, "format": "humaneval"} for r in he]))
    sets.append(("HumanEval, body replaced by `return None`", "rejected",
                 [{"id": r["task_id"], "code": f"def {r['entry_point']}(*a, **k):\n    return None\n", "tests": r,
                   "format": "humaneval"} for r in he]))
    if shared is not None:
        lc = json.loads((shared / "rllm-test" / "leetcode.json").read_text())
        sets.append(("LeetCode gold solutions (rllm test split)", "accepted",
                     [{"id": str(i), "code": r["solutions"], "tests": r["tests"]} for i, r in enumerate(lc)]))
        broken = []
        for i, r in enumerate(lc):
            m = re.search(r"check\(Solution\(\)\.(\w+)\)", str(r["tests"]))
            if m and "None" not in str(r["tests"]):
                broken.append({"id": str(i), "tests": r["tests"],
                               "code": r["solutions"] + f"\nSolution.{m.group(1)} = lambda self, *a, **k: None\n"})
        sets.append(("LeetCode, method replaced by `return None`", "rejected", broken))
        mbpp = [json.loads(line) for line in (shared / "sandboxfusion-samples" / "code_eval_mbpp.jsonl").open()]
        sets.append(("MBPP gold solutions (SandboxFusion samples)", "accepted",
                     [{"id": str(r["id"]), "code": r["canonical_solution"], "tests": r, "format": "mbpp"} for r in mbpp]))
        lcb = [json.loads(line) for line in (shared / "sandboxfusion-samples" / "code_eval_live_code_bench_v1.jsonl").open()]
        from coderl.judge.unpickle import decode_compressed_tests

        sets.append(("LiveCodeBench rows' `sys.exit(0)` 'solution'", "rejected",
                     [{"id": str(r["id"]), "code": r["canonical_solution"], "tests": decode_compressed_tests(r["test"])}
                      for r in lcb]))
    add = {"mode": "stdio", "cases": [{"input": "1 2\n", "output": "3\n"}]}
    sets.append(("hostile programs", "rejected", [
        {"id": name, "code": code.replace("{port}", str(port)), "tests": add,
         "limits": {"cpu_s": 1, "wall_s": 3, "memory_mb": 256, "max_processes": 32, "stdout_kb": 1024}}
        for name, code in HOSTILE.items()]))
    return sets


def _repo_tasks() -> list[dict[str, Any]]:
    """coderl's own repository tasks as rows, their mirrors built under the cache, and the service
    (started after this) told where they are through ``CODERL_SWE_REPOS``."""
    from coderl.cache import default_cache_dir
    from coderl.swe.task_set import build_task_set

    built = default_cache_dir() / "demo-swe"
    tasks = [t.to_row() for t in build_task_set(built)]
    os.environ["CODERL_SWE_REPOS"] = str(built / "repos")
    return tasks


def _repo_sets(tasks: list[dict[str, Any]]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(name, expected outcome, grading items): the gold fix must resolve every task, no change none."""
    return [("Repository tasks, gold patch (coderl's own)", "accepted",
             [{"task": t, "patch": t["patch"]} for t in tasks]),
            ("Repository tasks, empty patch", "rejected", [{"task": t, "patch": ""} for t in tasks])]


# The report's table counts judge verdicts; a repository grade is shown as the verdict it compares to.
_GRADE_VERDICT = {GradeStatus.RESOLVED: "accepted", GradeStatus.UNRESOLVED: "wrong_answer",
                  GradeStatus.TAMPERED: "wrong_answer", GradeStatus.APPLY_FAILED: "compile_error",
                  GradeStatus.SANDBOX_ERROR: "sandbox_error"}


def _humaneval() -> list[dict[str, Any]]:
    from coderl.data.evalsets import humaneval_source

    with gzip.open(humaneval_source(), "rt") as fh:
        return [json.loads(line) for line in fh]


async def _run(url: str, port: int, shared: Path | None, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    from tqdm import tqdm

    from coderl.client import SandboxClient

    rows = []
    async with SandboxClient(url) as client:
        caps = await client.capabilities()
        sets = _problem_sets(shared, port)
        repo_sets = _repo_sets(tasks)
        scored = [(s, _judge) for s in sets] + [(s, _grade) for s in repo_sets]
        with tqdm(total=sum(len(s[2]) for s, _ in scored), desc="judging", unit=" submissions",
                  file=sys.stderr) as bar:
            for (name, expect, subs), score in scored:
                started = time.monotonic()
                results = await score(client, subs)
                bar.update(len(subs))
                elapsed = time.monotonic() - started
                verdicts = Counter(r.get("verdict") or "error" for r in results)
                accepted = verdicts.get("accepted", 0)
                ok = accepted == len(results) if expect == "accepted" else accepted == 0
                ok = ok and not verdicts.get("sandbox_error") and not verdicts.get("error")
                rows.append({"set": name, "expect": expect, "n": len(results), "verdicts": dict(verdicts),
                             "tests": sum(r.get("total", 0) for r in results), "seconds": round(elapsed, 2),
                             "as_expected": ok,
                             "details": {r["id"]: r.get("verdict") for r in results} if name == "hostile programs" else {}})
    return {"isolation": caps["isolation"], "languages": sorted(caps["languages"]), "slots": caps["slots"],
            "rows": rows, "all_as_expected": all(r["as_expected"] for r in rows),
            "shared_data": str(shared) if shared else None}


async def _judge(client: Any, subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for i in range(0, len(subs), 64):
        results += await client.judge(subs[i:i + 64])
    return results


async def _grade(client: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Repository grades as judge-like results: a test is one FAIL_TO_PASS or PASS_TO_PASS test."""
    return [{"id": g.get("instance_id"), "verdict": _GRADE_VERDICT.get(g.get("status", ""), "error"),
             "total": len(g.get("fail_to_pass", {})) + len(g.get("pass_to_pass", {}))}
            for g in await client.grade_swe(items)]


def _render(report: dict[str, Any]) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"coderl end-to-end report (isolation: {report['isolation']}, {report['slots']} slots)")
    for col in ("problem set", "expected", "n", "AC", "WA", "TLE", "MLE", "RE", "OLE", "CE", "SE", "tests/s", "ok"):
        table.add_column(col, justify="right" if col not in ("problem set", "expected") else "left")
    short = ["accepted", "wrong_answer", "time_limit", "memory_limit", "runtime_error", "output_limit",
             "compile_error", "sandbox_error"]
    for r in report["rows"]:
        v = r["verdicts"]
        rate = r["tests"] / r["seconds"] if r["seconds"] else 0.0
        table.add_row(r["set"], r["expect"], str(r["n"]), *[str(v.get(k, 0)) for k in short], f"{rate:.0f}",
                      "yes" if r["as_expected"] else "NO")
    console = Console(record=True, width=150)
    with console.capture() as capture:
        console.print(table)
        hostile = next((r for r in report["rows"] if r["set"] == "hostile programs"), None)
        if hostile:
            console.print("hostile programs: " + "; ".join(f"{k} -> {v}" for k, v in hostile["details"].items()))
        if report["shared_data"] is None:
            console.print("(../shared/data not found: only HumanEval, the hostile set and the repository tasks were scored)")
        console.print("all as expected" if report["all_as_expected"] else "SOME RESULTS WERE NOT AS EXPECTED")
    return capture.get()
