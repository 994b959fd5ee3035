"""`coderl eval swe-gate`: the validation gate SWE-bench runs on its own rows, on ours: each task's gold
patch and an empty patch, graded by the real grader in the task's environment. A task is kept when
the gold patch resolves it and the empty one does not. PASS_TO_PASS tests that fail even with the
gold patch (the environment drifted from the one the row was made in) are dropped from the kept
row and recorded with their status; a FAIL_TO_PASS test that fails with the gold patch drops the
task.

Per instance (``gate.jsonl``, appended as each finishes, so a second run on the same ``--out``
resumes): the environment (built or why not, seconds), the gold and empty statuses, the dropped
tests, kept or why not, as a category (``environment``, ``gold_not_resolved``, ``empty_resolves``,
``sandbox_error``, ``tampered``, ...) and a message. ``tasks.jsonl``: the kept rows, ready for
`coderl eval swe --tasks` and training; ``gate.md``: the table docs/agent.md shows.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from coderl.data.common import read_rows, write_jsonl
from coderl.errors import BadRequest, CoderlError
from coderl.eval.swe import read_records
from coderl.sandbox.session import SessionHost
from coderl.swe.grader import GradeResult, RepoGrader
from coderl.swe.store import RepoStore
from coderl.swe.task import RepoTask

PASSING = frozenset({"PASSED", "XPASS", "XFAIL"})


def gate_record(task: RepoTask, gold: GradeResult, empty: GradeResult) -> dict[str, Any]:
    """Kept or not, and why, from the two grading runs (``env`` filled in by the caller)."""
    drift = {t: s for t, s in gold.pass_to_pass.items() if s not in PASSING}
    f2p_failing = {t: s for t, s in gold.fail_to_pass.items() if s not in PASSING}
    rec: dict[str, Any] = {"instance_id": task.instance_id, "gold": gold.status.value, "empty": empty.status.value,
                           "gold_message": gold.message[:500], "empty_message": empty.message[:500],
                           "gold_findings": gold.findings[:5], "p2p_dropped": drift, "kept": False,
                           "gold_s": gold.wall_s, "empty_s": empty.wall_s,
                           "gold_tests": {**gold.fail_to_pass, **gold.pass_to_pass},
                           "empty_tests": {**empty.fail_to_pass, **empty.pass_to_pass}}
    for name, result in (("gold", gold), ("empty", empty)):
        if result.status.value in ("sandbox_error", "tampered", "apply_failed"):
            return {**rec, "category": f"{name}_{result.status.value}",
                    "why": f"{name} patch graded {result.status.value}: {(result.message or '; '.join(result.findings))[:300]}"}
    if f2p_failing:
        return {**rec, "category": "gold_not_resolved",
                "why": f"FAIL_TO_PASS failing with the gold patch: {_some(f2p_failing)}"}
    empty_f2p = [t for t, s in empty.fail_to_pass.items() if s not in PASSING]
    if not empty_f2p:
        return {**rec, "category": "empty_resolves", "why": "every FAIL_TO_PASS test passes with the empty patch"}
    kept_p2p = len(task.pass_to_pass) - len(drift)
    why = f"{len(drift)} PASS_TO_PASS dropped (fail with gold: {_some(drift)})" if drift else ""
    return {**rec, "kept": True, "category": "kept", "why": why, "p2p_kept": kept_p2p}


def _some(tests: dict[str, str]) -> str:
    items = list(tests.items())
    more = f" and {len(items) - 3} more" if len(items) > 3 else ""
    return ", ".join(f"{t} {s}" for t, s in items[:3]) + more


def kept_row(row: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The validated row: the drifted PASS_TO_PASS tests taken out."""
    dropped = record["p2p_dropped"]
    p2p = [t for t in RepoTask.from_row(row).pass_to_pass if t not in dropped]
    return {**row, "PASS_TO_PASS": p2p, "gate": {"p2p_dropped": dropped}}


async def run_gate(tasks_file: str, repos: Path, out: Path, *, cache_dir: Path, concurrency: int = 1,
                   instances: list[str] | None = None) -> dict[str, Any]:
    rows = [r for r in read_rows(tasks_file) if isinstance(r, dict)]
    if instances:
        rows = [r for r in rows if r.get("instance_id") in set(instances)]
    if not rows:
        raise BadRequest(f"{tasks_file}: no tasks")
    if not repos.is_dir():
        raise BadRequest(f"--repos {repos}: no such directory")
    out.mkdir(parents=True, exist_ok=True)
    log = out / "gate.jsonl"
    done = {r["instance_id"]: r for r in read_records(log)}
    store = RepoStore(repos.resolve(), cache_dir)
    gate = asyncio.Semaphore(concurrency)
    async with SessionHost() as host:
        grader = RepoGrader(host, store, env_cache=cache_dir, concurrency=concurrency)

        async def one(row: dict[str, Any]) -> None:
            task = RepoTask.from_row(row)
            async with gate:
                t0 = time.monotonic()
                try:
                    _, env_dir = await grader.prepare(task)
                    env = {"built": True, "env_dir": str(env_dir), "prepare_s": round(time.monotonic() - t0, 1)}
                except CoderlError as exc:
                    env = {"built": False, "error": str(exc)[:500], "prepare_s": round(time.monotonic() - t0, 1)}
                if env["built"]:
                    gold = await grader.grade(task, task.gold_patch)
                    empty = await grader.grade(task, "")
                    record = {**gate_record(task, gold, empty), "env": env}
                else:
                    record = {"instance_id": task.instance_id, "kept": False, "category": "environment",
                              "why": f"environment not built: {env['error']}", "env": env, "gold": "", "empty": ""}
            record["repo"], record["version"] = row.get("repo"), row.get("version", "")
            with log.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            done[task.instance_id] = record

        await asyncio.gather(*(one(r) for r in rows if r["instance_id"] not in done))
    records = [done[r["instance_id"]] for r in rows]
    kept = [kept_row(r, done[r["instance_id"]]) for r in rows if done[r["instance_id"]]["kept"]]
    write_jsonl(kept, out / "tasks.jsonl")
    summary = {"tasks": len(rows), "kept": len(kept), "categories": dict(Counter(r["category"] for r in records)),
               "p2p_dropped": sum(len(r.get("p2p_dropped") or {}) for r in records)}
    (out / "gate.json").write_text(json.dumps({"summary": summary, "instances": records}, indent=2))
    (out / "gate.md").write_text(gate_markdown(summary, records) + "\n")
    return summary


def gate_markdown(summary: dict[str, Any], records: list[dict[str, Any]]) -> str:
    lines = [f"kept {summary['kept']}/{summary['tasks']}; "
             + ", ".join(f"{k} {v}" for k, v in sorted(summary["categories"].items())), "",
             "| instance | env | gold | empty | kept | why not / dropped tests |", "|---|---|---|---|---|---|"]
    for r in records:
        env = r.get("env", {})
        built = f"yes ({env.get('prepare_s', 0):.0f} s)" if env.get("built") else "no"
        lines.append(f"| {r['instance_id']} | {built} | {r.get('gold', '')} | {r.get('empty', '')} | "
                     f"{'yes' if r['kept'] else 'no'} | {' '.join(r.get('why', '').replace('|', '/').split())[:200]} |")
    return "\n".join(lines)

