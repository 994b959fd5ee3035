"""PrimeIntellect/verifiable-coding-problems -> verl RL parquet for multi-turn tool RL.

The recipe's filters (a python gold solution in a fence, parseable verification_info, language
python, >= 5 tests, first test with input and output), then exact-duplicate removal and
decontamination against evaluation problems (same normalised statement), a tool-aware system
prompt, the normalised test schema as ground truth, and a seeded train/validation split.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from coderl.data.common import (
    BuildReport,
    Drop,
    convert,
    normalise_statement,
    parse_json_field,
    read_rows,
    seeded_split,
    write_parquet,
)
from coderl.data.prompts import tool_messages
from coderl.judge.formats import to_spec
from coderl.judge.spec import TestSpec

_GOLD = re.compile(r"^\s*```python\s*\n(.*)\n```\s*$", re.S)


def rl_record(data_source: str, statement: str, spec: TestSpec, problem_id: str, solution: str | None,
              split: str = "train", index: int = 0) -> dict[str, Any]:
    """One verl RL row, the shape every RL builder writes: the tool prompt, the normalised tests as
    the reward's ground truth, and what verl's tool agent loop reads from extra_info."""
    return {
        "data_source": data_source,
        "prompt": tool_messages(statement),
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": spec.model_dump_json()},
        # create_kwargs names the problem: parquet cannot store an empty struct, and the tool takes
        # (and ignores) any create kwargs.
        "extra_info": {"index": index, "split": split, "problem_id": problem_id,
                       "tools_kwargs": {"code_interpreter": {"create_kwargs": {"problem_id": problem_id}}}},
        "agent_name": "tool_agent",
        "solution": solution or "",
    }


def rl_row(row: dict[str, Any], *, min_tests: int = 5) -> dict[str, Any]:
    """One PrimeIntellect row -> one verl RL row (raises Drop with the reason)."""
    gold = row.get("gold_standard_solution")
    if not isinstance(gold, str) or not (match := _GOLD.match(gold)):
        raise Drop("gold solution is not a ```python block", str(gold)[:80])
    info = parse_json_field(row.get("verification_info"), "verification_info")
    if not isinstance(info, dict):
        raise Drop("verification_info is not an object", str(info)[:80])
    if info.get("language") != "python":
        raise Drop("language is not python", str(info.get("language")))
    cases = info.get("test_cases")
    if not isinstance(cases, list) or len(cases) < max(min_tests, 1):
        raise Drop(f"fewer than {max(min_tests, 1)} tests", str(len(cases) if isinstance(cases, list) else cases))
    if not isinstance(cases[0], dict) or "input" not in cases[0] or "output" not in cases[0]:
        raise Drop("first test lacks input/output", str(cases[0])[:80])
    spec = to_spec(info, "primeintellect")
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise Drop("empty prompt", str(row.get("problem_id")))
    return rl_record(str(row.get("source") or "primeintellect"), prompt, spec,
                     str(row.get("problem_id") or ""), match.group(1))


def evaluation_statements(source: str) -> list[str]:
    """The statements to decontaminate against, from any problems file a builder wrote (or raw
    LiveCodeBench rows): question_content, else the user turn of a chat prompt."""
    out = []
    for row in read_rows(source):
        if not isinstance(row, dict):
            continue
        text = row.get("question_content") or row.get("prompt")
        if isinstance(text, list):
            text = next((m.get("content") for m in reversed(text) if isinstance(m, dict) and m.get("role") == "user"), "")
        if isinstance(text, str) and text.strip():
            out.append(text)
    return out


_PI_HEAD = re.compile(r"\A\s*Solve the following coding problem using the programming language \w+:\s*")
_PI_TAIL = re.compile(r"\s*(The input will be [^\n]*\s*)?Now solve the problem and return the code\.\s*\Z")


def unwrapped(prompt: str) -> str:
    """The problem statement inside PrimeIntellect's prompt wrapper ("Solve the following coding
    problem ... Now solve the problem and return the code."): what duplicate and contamination
    checks compare, since an evaluation set holds the bare statement. The model still sees the
    whole prompt."""
    return _PI_TAIL.sub("", _PI_HEAD.sub("", prompt))


def build_rl(source: str, out_dir: str | Path, *, limit: int | None = None, val_fraction: float = 0.01,
             seed: int = 42, decontaminate: Iterable[str] = (), min_tests: int = 5) -> BuildReport:
    """Write train.parquet and validation.parquet (+ report.json) under out_dir."""
    report = BuildReport("rl")
    banned = {normalise_statement(s) for s in decontaminate if s}
    long_banned = [b for b in banned if len(b) > 200]  # long statements also match when embedded
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    for built in convert(report, read_rows(source, limit=limit), lambda r: rl_row(r, min_tests=min_tests), "rl"):
        statement = unwrapped(built["prompt"][-1]["content"])
        key = normalise_statement(statement)
        if key in banned or any(b in key for b in long_banned):
            report.drop("matches an evaluation problem", statement[:80])
            continue
        if key in seen:
            report.drop("exact duplicate", statement[:80])
            continue
        seen.add(key)
        if not built["extra_info"]["problem_id"]:
            built["extra_info"]["problem_id"] = f"row{report.read - 1}"
            built["extra_info"]["tools_kwargs"]["code_interpreter"]["create_kwargs"]["problem_id"] = f"row{report.read - 1}"
        rows.append(built)
    report.kept = len(rows)
    report.check_nonempty()
    out = Path(out_dir)
    for split, split_rows in zip(("train", "validation"), seeded_split(rows, val_fraction, seed), strict=True):
        for i, r in enumerate(split_rows):
            r["extra_info"].update(split=split, index=i)
        if split_rows:
            report.outputs.append(write_parquet(split_rows, out / f"{split}.parquet"))
    report.save(out)
    return report
