"""LiveCodeBench code_generation_lite -> an evaluation set (JSONL + parquet).

Releases: ``release_v1``..``release_v6`` / ``release_latest`` (test.jsonl up to testN.jsonl),
``vN`` (testN.jsonl alone), ``vA_vB`` (testA..testB). The date window is inclusive on both ends,
as LiveCodeBench filters. Private tests are decoded with the restricted unpickler. Each problem
keeps its difficulty, platform and date, the official prompt (with or without starter code) and
its tests in the normalised schema. Default: release_v5, 2024-08-01..2025-02-01 (279 problems on
the full data; the window DeepCoder and the recipe report).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from coderl.data.common import BuildReport, Drop, progress, read_rows, write_jsonl, write_parquet
from coderl.data.prompts import lcb_messages
from coderl.errors import BadRequest, InvalidTestSpec
from coderl.judge.formats import to_spec

FILES = ["test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl"]
DEFAULT_RELEASE, DEFAULT_START, DEFAULT_END = "release_v5", "2024-08-01", "2025-02-01"


def release_files(release: str) -> list[str]:
    if release == "release_latest":
        release = "release_v6"
    if m := re.fullmatch(r"release_v([1-6])", release):
        return FILES[: int(m.group(1))]
    if m := re.fullmatch(r"v([1-6])", release):
        return [FILES[int(m.group(1)) - 1]]
    if (m := re.fullmatch(r"v([1-6])_v([1-6])", release)) and int(m.group(1)) <= int(m.group(2)):
        return FILES[int(m.group(1)) - 1: int(m.group(2))]
    raise BadRequest(f"unknown LiveCodeBench release {release!r}: use release_v1..release_v6, release_latest, vN or vA_vB")


def _date(text: str, what: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        raise BadRequest(f"{what} must be YYYY-MM-DD, got {text!r}") from None


def lcb_row(row: dict[str, Any], start: datetime, end: datetime) -> dict[str, Any]:
    if "__malformed__" in row:
        raise Drop("malformed line", row["__malformed__"])
    try:
        date = datetime.fromisoformat(str(row["contest_date"]))
    except (KeyError, ValueError):
        raise Drop("contest_date missing or not ISO", str(row.get("contest_date"))) from None
    if not start <= date <= end:  # inclusive, as LiveCodeBench compares
        raise Drop("outside the date window", str(row.get("contest_date")))
    try:
        spec = to_spec(row, "lcb_row")
    except InvalidTestSpec as exc:
        raise Drop("tests unreadable", str(exc)) from None
    starter = row.get("starter_code") or ""
    return {
        "question_id": str(row.get("question_id")), "question_title": str(row.get("question_title", "")),
        "platform": str(row.get("platform", "")), "difficulty": str(row.get("difficulty", "")),
        "contest_id": str(row.get("contest_id", "")), "contest_date": date.isoformat(),
        "starter_code": starter, "fn_name": spec.fn_name, "prompt": lcb_messages(str(row.get("question_content", "")), starter),
        "question_content": str(row.get("question_content", "")), "tests": spec.model_dump_json(),
    }


def build_lcb(source: str, out_dir: str | Path, *, release: str = DEFAULT_RELEASE, start_date: str = DEFAULT_START,
              end_date: str = DEFAULT_END, limit: int | None = None) -> BuildReport:
    start, end = _date(start_date, "start date"), _date(end_date, "end date")
    if start > end:
        raise BadRequest(f"start date {start_date} is after end date {end_date}")
    files = release_files(release)
    path = Path(source)
    sources = [path / f for f in files if (path / f).exists()] if path.is_dir() else [path]
    if path.is_dir() and not sources:
        raise BadRequest(f"{source}: none of {files} found (release {release})")
    report = BuildReport(f"lcb {release} {start_date}..{end_date}")
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for src in sources:
        for row in progress(read_rows(src, limit=limit), f"lcb {Path(src).name}"):
            report.read += 1
            try:
                built = lcb_row(row, start, end)
            except Drop as drop:
                report.drop(drop.reason, drop.detail)
                continue
            if built["question_id"] in seen:
                report.drop("duplicate question_id", built["question_id"])
                continue
            seen.add(built["question_id"])
            rows.append(built)
    report.kept = len(rows)
    report.check_nonempty()
    rows.sort(key=lambda r: (r["contest_date"], r["question_id"]))
    out = Path(out_dir)
    report.outputs.append(write_jsonl(rows, out / "problems.jsonl"))
    report.outputs.append(write_parquet(rows, out / "problems.parquet"))
    meta = {"release": release, "start_date": start_date, "end_date": end_date, "problems": len(rows),
            "by_difficulty": _count(rows, "difficulty"), "by_platform": _count(rows, "platform")}
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    (out / "report.json").write_text(json.dumps(report.to_dict(), indent=2))
    return report


def _count(rows: list[dict[str, Any]], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r[key]] = out.get(r[key], 0) + 1
    return out
