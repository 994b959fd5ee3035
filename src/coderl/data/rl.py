"""PrimeIntellect/verifiable-coding-problems -> verl RL parquet for multi-turn tool RL.

The recipe's filters (a python gold solution in a fence, parseable verification_info, language
python, >= 5 tests, first test with input and output), then exact-duplicate removal and
decontamination against evaluation problems (same normalised statement), a tool-aware system
prompt, the normalised test schema as ground truth, and a seeded train/validation split.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from coderl.data.common import (
    BuildReport,
    Drop,
    normalise_statement,
    parse_json_field,
    progress,
    read_rows,
    write_parquet,
)
from coderl.data.prompts import tool_messages
from coderl.errors import InvalidTestSpec
from coderl.judge.formats import to_spec

_GOLD = re.compile(r"^\s*```python\s*\n(.*)\n```\s*$", re.S)


def rl_row(row: dict[str, Any], index: int, *, min_tests: int = 5) -> dict[str, Any]:
    """One PrimeIntellect row -> one verl RL row (raises Drop with the reason)."""
    if "__malformed__" in row:
        raise Drop("malformed line", row["__malformed__"])
    gold = row.get("gold_standard_solution")
    if not isinstance(gold, str) or not (match := _GOLD.match(gold)):
        raise Drop("gold solution is not a ```python block", str(gold)[:80])
    info = parse_json_field(row.get("verification_info"), "verification_info")
    if not isinstance(info, dict):
        raise Drop("verification_info is not an object", str(info)[:80])
    if info.get("language") != "python":
        raise Drop("language is not python", str(info.get("language")))
    cases = info.get("test_cases")
    if not isinstance(cases, list) or len(cases) < min_tests:
        raise Drop(f"fewer than {min_tests} tests", str(len(cases) if isinstance(cases, list) else cases))
    if not isinstance(cases[0], dict) or "input" not in cases[0] or "output" not in cases[0]:
        raise Drop("first test lacks input/output", str(cases[0])[:80])
    try:
        spec = to_spec(info, "primeintellect")
    except InvalidTestSpec as exc:
        raise Drop("tests unreadable", str(exc)) from None
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise Drop("empty prompt", str(row.get("problem_id")))
    problem_id = str(row.get("problem_id") or f"row{index}")
    return {
        "data_source": str(row.get("source") or "primeintellect"),
        "prompt": tool_messages(prompt),
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": spec.model_dump_json()},
        "extra_info": {"index": index, "split": "", "problem_id": problem_id,
                       "tools_kwargs": {"code_interpreter": {"create_kwargs": {"problem_id": problem_id}}}},
        "agent_name": "tool_agent",
        "solution": match.group(1),
    }


def build_rl(source: str, out_dir: str | Path, *, limit: int | None = None, val_fraction: float = 0.01,
             seed: int = 42, decontaminate: Iterable[str] = (), min_tests: int = 5) -> BuildReport:
    report = BuildReport("rl")
    banned = {normalise_statement(s) for s in decontaminate if s}
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    for row in progress(read_rows(source, limit=limit), "rl"):
        report.read += 1
        try:
            built = rl_row(row, report.read - 1, min_tests=min_tests)
        except Drop as drop:
            report.drop(drop.reason, drop.detail)
            continue
        key = normalise_statement(row["prompt"])
        if key in banned or any(b and b in key for b in banned if len(b) > 200):
            report.drop("matches an evaluation problem", row["prompt"][:80])
            continue
        if key in seen:
            report.drop("exact duplicate", row["prompt"][:80])
            continue
        seen.add(key)
        rows.append(built)
    report.kept = len(rows)
    report.check_nonempty()
    rng = random.Random(seed)
    order = list(range(len(rows)))
    rng.shuffle(order)
    n_val = max(1, round(len(rows) * val_fraction)) if len(rows) > 1 else 0
    val_ids = set(order[:n_val])
    splits: dict[str, list[dict[str, Any]]] = {"train": [], "validation": []}
    for i, r in enumerate(rows):
        split = "validation" if i in val_ids else "train"
        r["extra_info"]["split"] = split
        r["extra_info"]["index"] = len(splits[split])
        splits[split].append(r)
    out = Path(out_dir)
    for split, split_rows in splits.items():
        if split_rows:
            report.outputs.append(write_parquet(split_rows, out / f"{split}.parquet"))
    (out / "report.json").write_text(json.dumps(report.to_dict(), indent=2))
    return report
