"""LiveCodeBench code_generation_lite -> an evaluation set (problems.jsonl + parquet + meta.json).

Releases: ``release_v1``..``release_v6`` / ``release_latest`` (test.jsonl up to testN.jsonl),
``vN`` (testN.jsonl alone), ``vA_vB`` (testA..testB). The date window is inclusive on both ends,
as LiveCodeBench filters. Private tests are decoded with the restricted unpickler. Each problem
keeps its difficulty, platform and date, the official prompt (with or without starter code) and
its tests in the normalised schema. Default: release_v5, 2024-08-01..2025-02-01 (279 problems on
the full data; the window DeepCoder and the recipe report).

The source is a directory holding the jsonl files, one jsonl/parquet file (a parquet copy, or one
file of a release), or the hub name, whose release files are downloaded one by one (the hub's
loading script no longer runs with datasets >= 4).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from itertools import chain, islice
from pathlib import Path
from typing import Any

from coderl.data.common import BuildReport, Drop, convert, read_rows, write_jsonl, write_parquet
from coderl.data.prompts import lcb_messages
from coderl.errors import BadRequest
from coderl.judge.formats import to_spec
from coderl.judge.spec import TestSpec

FILES = ["test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl"]
DEFAULT_RELEASE, DEFAULT_START, DEFAULT_END = "release_v5", "2024-08-01", "2025-02-01"
HUB_NAME = "livecodebench/code_generation_lite"
_STATEMENT_KEYS = ("question_content", "question_title")


def release_files(release: str) -> list[str]:
    """The jsonl files a release tag names, as LiveCodeBench's loader maps them."""
    if release == "release_latest":
        release = "release_v6"
    if m := re.fullmatch(r"release_v([1-6])", release):
        return FILES[: int(m.group(1))]
    if m := re.fullmatch(r"v([1-6])", release):
        return [FILES[int(m.group(1)) - 1]]
    if (m := re.fullmatch(r"v([1-6])_v([1-6])", release)) and int(m.group(1)) <= int(m.group(2)):
        return FILES[int(m.group(1)) - 1: int(m.group(2))]
    raise BadRequest(f"unknown LiveCodeBench release {release!r}: use release_v1..release_v6, release_latest, vN or vA_vB")


def parse_date(text: str, what: str) -> datetime:
    """A YYYY-MM-DD bound at midnight, as LiveCodeBench parses its window (so an end date includes
    contests that day at 00:00, as the official filter does)."""
    try:
        return datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        raise BadRequest(f"{what} must be YYYY-MM-DD, got {text!r}") from None


def lcb_row(row: dict[str, Any], start: datetime, end: datetime, prompt_style: str = "generic") -> dict[str, Any]:
    """One LiveCodeBench record -> one evaluation problem (raises Drop with the reason)."""
    try:
        date = datetime.fromisoformat(str(row["contest_date"]))
    except (KeyError, ValueError):
        raise Drop("contest_date missing or not ISO", str(row.get("contest_date"))) from None
    if not start <= date <= end:  # inclusive, as LiveCodeBench compares
        raise Drop("outside the date window", f"{row.get('question_id')} {row.get('contest_date')}")
    question = row.get("question_content")
    if not isinstance(question, str) or not question.strip():
        raise Drop("no question_content", str(row.get("question_id")))
    # The tests alone, without the statement: LiveCodeBench keeps its few interactive problems
    # (unsolvable with fixed tests, listed in its ERRATA) and so does this set, so the window's
    # problem count and the pass@1 denominator match the official numbers.
    spec = to_spec({k: v for k, v in row.items() if k not in _STATEMENT_KEYS}, "lcb_row")
    return eval_record(str(row.get("question_id")), question, spec, starter_code=row.get("starter_code") or "",
                       title=str(row.get("question_title", "")), platform=str(row.get("platform", "")),
                       difficulty=str(row.get("difficulty", "")), contest_id=str(row.get("contest_id", "")),
                       contest_date=date.isoformat(), prompt_style=prompt_style)


def eval_record(question_id: str, question: str, spec: TestSpec, *, starter_code: str = "", title: str = "",
                platform: str = "", difficulty: str = "", contest_id: str = "", contest_date: str = "",
                solution: str | None = None, prompt_style: str = "generic") -> dict[str, Any]:
    """One evaluation problem, the shape `coderl eval` reads: the official prompt, the normalised
    tests (JSON), and what the summary groups by."""
    return {
        "question_id": question_id, "question_title": title or question_id, "platform": platform,
        "difficulty": difficulty, "contest_id": contest_id, "contest_date": contest_date,
        "starter_code": starter_code, "fn_name": spec.fn_name,
        "prompt": lcb_messages(question, starter_code, prompt_style), "question_content": question,
        "tests": spec.model_dump_json(), "solution": solution or "",
    }


def _sources(source: str, files: list[str]) -> list[str]:
    path = Path(source)
    if path.is_dir():
        found = [str(path / f) for f in files if (path / f).exists()]
        if not found:
            raise BadRequest(f"{source}: none of {', '.join(files)} found")
        return found
    if path.exists():
        return [str(path)]
    if source.count("/") != 1:
        raise BadRequest(f"{source}: no such file or directory (and not a hub dataset name like org/name)")
    return [_download(source, f) for f in files]


def _download(repo: str, filename: str) -> str:
    """One release file from the hub into the local cache (needs network)."""
    try:
        from huggingface_hub import hf_hub_download

        return hf_hub_download(repo, filename, repo_type="dataset")
    except Exception as exc:  # noqa: BLE001 - network, auth, missing file: one clear line
        raise BadRequest(f"cannot download {filename} of {repo!r} ({type(exc).__name__}); "
                         "download the jsonl files and pass their directory") from None


def build_lcb(source: str, out_dir: str | Path, *, release: str = DEFAULT_RELEASE, start_date: str = DEFAULT_START,
              end_date: str = DEFAULT_END, prompt_style: str = "generic", limit: int | None = None) -> BuildReport:
    """Write problems.jsonl, problems.parquet, meta.json and report.json under out_dir."""
    start, end = parse_date(start_date, "start date"), parse_date(end_date, "end date")
    if start > end:
        raise BadRequest(f"start date {start_date} is after end date {end_date}")
    lcb_messages("", "", prompt_style)  # an unknown style is a bad request before any reading
    sources = _sources(source, release_files(release))
    report = BuildReport(f"lcb {release} {start_date}..{end_date}")
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    records = chain.from_iterable(read_rows(s) for s in sources)
    for built in convert(report, islice(records, limit),
                         lambda r: lcb_row(r, start, end, prompt_style), "lcb"):
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
    meta = {"release": release, "start_date": start_date, "end_date": end_date, "prompt_style": prompt_style,
            "problems": len(rows), "by_difficulty": dict(sorted(Counter(r["difficulty"] for r in rows).items())),
            "by_platform": dict(sorted(Counter(r["platform"] for r in rows).items()))}
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    report.save(out)
    return report
