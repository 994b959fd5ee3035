"""LiveCodeBench code_generation_lite -> an evaluation set (problems.jsonl + parquet + meta.json).

Releases: ``release_v1``..``release_v6`` / ``release_latest`` (test.jsonl up to testN.jsonl),
``vN`` (testN.jsonl alone), ``vA_vB`` (testA..testB). The date window is inclusive on both ends,
as LiveCodeBench filters. Private tests are decoded with the restricted unpickler. Each problem
keeps its difficulty, platform and date, the official prompt (with or without starter code) and
its tests in the normalised schema. Default: release_v5, 2024-08-01..2025-02-01 (279 problems on
the full data; the window DeepCoder and the recipe report).

The source is a directory holding the jsonl files, one jsonl/parquet file (a parquet copy, one
file of a release, or SandboxFusion's LiveCodeBench sample rows, which carry no date: build them
with the date filter off), or the hub name, whose release files are downloaded one by one (the hub's
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


def lcb_row(row: dict[str, Any], start: datetime | None, end: datetime | None,
            prompt_style: str = "generic") -> dict[str, Any]:
    """One LiveCodeBench record (or SandboxFusion's copy of one) -> one evaluation problem (raises
    Drop with the reason). ``start``/``end`` None: no date filter, and a row without a date is kept."""
    if "content" in row and "test" in row and "question_content" not in row:
        row = sandboxfusion_lcb_row(row)
    date: datetime | None = None
    if row.get("contest_date") or (start, end) != (None, None):
        try:
            date = datetime.fromisoformat(str(row["contest_date"]))
        except (KeyError, ValueError):
            raise Drop("contest_date missing or not ISO (--no-date-filter keeps such rows)",
                       str(row.get("contest_date"))) from None
        if not (start or datetime.min) <= date <= (end or datetime.max):  # inclusive, as LiveCodeBench compares
            raise Drop("outside the date window", f"{row.get('question_id')} {row.get('contest_date')}")
    question = row.get("question_content")
    if not isinstance(question, str) or not question.strip():
        raise Drop("no question_content", str(row.get("question_id")))
    # The tests alone, without the statement: LiveCodeBench keeps its few interactive problems
    # (unsolvable with fixed tests, listed in its ERRATA) and so does this set, so the window's
    # problem count and the pass@1 denominator match the official numbers.
    spec = (to_spec(row["tests"]) if "tests" in row
            else to_spec({k: v for k, v in row.items() if k not in _STATEMENT_KEYS}, "lcb_row"))
    return eval_record(str(row.get("question_id")), question, spec, starter_code=row.get("starter_code") or "",
                       title=str(row.get("question_title", "")), platform=str(row.get("platform", "")),
                       difficulty=str(row.get("difficulty", "")), contest_id=str(row.get("contest_id", "")),
                       contest_date=date.isoformat() if date else "", prompt_style=prompt_style)


def sandboxfusion_lcb_row(row: dict[str, Any]) -> dict[str, Any]:
    """SandboxFusion's LiveCodeBench rows (``code_eval_live_code_bench_v1``: the whole prompt in
    ``content``, base64+zlib tests in ``test``, ids and difficulty in ``labels``, no date) -> the
    fields of a LiveCodeBench record."""
    labels = row.get("labels") or {}
    if isinstance(labels, str):
        labels = json.loads(labels)
    content = str(row["content"])
    question = content.split("### Question:\n", 1)[-1].split("\n### Format:", 1)[0].strip()
    starter = ""
    if "starter code" in content.split("### Format:", 1)[-1].split("\n", 1)[0]:
        block = re.search(r"### Format:[^\n]*\n```\w*\n(.*?)```", content, re.S)
        starter = block.group(1).rstrip() + "\n" if block else ""
    from coderl.judge.unpickle import decode_compressed_tests

    io = json.loads(decode_compressed_tests(row["test"])["input_output"])
    fn_name = io.get("fn_name")  # LeetCode: each input is LiveCodeBench's newline-separated JSON arguments
    cases = [{"input": i, "output": o, "testtype": "functional" if fn_name else "stdin"}
             for i, o in zip(io["inputs"], io["outputs"], strict=True)]
    return {"question_id": str(labels.get("task_id") or row.get("id")), "question_content": question,
            "question_title": str(labels.get("task_id") or row.get("id")), "platform": labels.get("category", ""),
            "difficulty": labels.get("difficulty", ""), "starter_code": starter,
            "tests": to_spec(cases, "lcb_tests", fn_name=fn_name)}


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
    if source.count("/") != 1 or source.startswith((".", "/", "~")):
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


def build_lcb(source: str, out_dir: str | Path, *, release: str = DEFAULT_RELEASE, start_date: str | None = DEFAULT_START,
              end_date: str | None = DEFAULT_END, prompt_style: str = "generic", limit: int | None = None) -> BuildReport:
    """Write problems.jsonl, problems.parquet, meta.json and report.json under out_dir. A date of
    None (or "all") leaves that end of the window open; both None keep rows without a date."""
    start_date, end_date = (None if d in (None, "all") else d for d in (start_date, end_date))
    start = parse_date(start_date, "start date") if start_date else None
    end = parse_date(end_date, "end date") if end_date else None
    if start and end and start > end:
        raise BadRequest(f"start date {start_date} is after end date {end_date}")
    lcb_messages("", "", prompt_style)  # an unknown style is a bad request before any reading
    sources = _sources(source, release_files(release))
    report = BuildReport(f"lcb {release} {start_date or 'any date'}..{end_date or 'any date'}")
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
