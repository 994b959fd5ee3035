"""The dataset builders on fixtures in the upstream schemas and on the real rows in shared/:
filters and reports, deterministic output, and outputs that verl 0.9.1's datasets load and whose
gold solutions our judge accepts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from coderl.data.lcb import build_lcb, release_files
from coderl.data.rl import build_rl
from coderl.data.sft import build_sft
from coderl.errors import BadRequest
from coderl.judge import Submission
from tests.data import fixtures
from tests.helpers.shared_data import SHARED, needs_shared_data


def test_rl_builder_filters_dedups_decontaminates(tmp_path):
    src = fixtures.write_jsonl(fixtures.pi_rows(), tmp_path / "pi.jsonl")
    report = build_rl(src, tmp_path / "out", decontaminate=["Known evaluation problem: compute the overall winner of the games."])
    assert report.read == 9 and report.kept == 3
    assert report.dropped == {"exact duplicate": 1, "fewer than 5 tests": 1, "language is not python": 1,
                              "gold solution is not a ```python block": 1, "verification_info does not parse": 1,
                              "matches an evaluation problem": 1}
    rows = pq.read_table(tmp_path / "out" / "train.parquet").to_pylist() + \
        pq.read_table(tmp_path / "out" / "validation.parquet").to_pylist()
    assert len(rows) == 3
    row = rows[0]
    assert row["agent_name"] == "tool_agent" and row["ability"] == "code"
    assert row["prompt"][0]["role"] == "system" and "code_interpreter" in row["prompt"][0]["content"]
    assert json.loads(row["reward_model"]["ground_truth"])["mode"] in ("stdio", "function")
    assert row["extra_info"]["tools_kwargs"]["code_interpreter"]["create_kwargs"]["problem_id"]


def test_rl_output_is_deterministic(tmp_path):
    src = fixtures.write_jsonl(fixtures.pi_rows(), tmp_path / "pi.jsonl")
    build_rl(src, tmp_path / "a")
    build_rl(src, tmp_path / "b")
    for name in ("train.parquet", "validation.parquet"):
        assert pq.read_table(tmp_path / "a" / name).equals(pq.read_table(tmp_path / "b" / name))


def test_rl_gold_solutions_accepted_through_the_built_ground_truth(tmp_path, judge):
    src = fixtures.write_jsonl(fixtures.pi_rows(), tmp_path / "pi.jsonl")
    build_rl(src, tmp_path / "out")
    rows = [r for f in ("train", "validation") for r in pq.read_table(tmp_path / "out" / f"{f}.parquet").to_pylist()]
    results = judge([Submission(code=r["solution"], spec=r["reward_model"]["ground_truth"]) for r in rows])
    assert all(r.accepted for r in results), [(r.verdict, r.cases[0].message) for r in results]


def test_zero_surviving_rows_is_an_error_naming_reasons(tmp_path):
    src = fixtures.write_jsonl([fixtures.pi_row("x", "p", language="cpp")], tmp_path / "pi.jsonl")
    with pytest.raises(BadRequest, match="language is not python"):
        build_rl(src, tmp_path / "out")


def test_rl_loads_with_verls_rlhf_dataset(tmp_path, tokenizer):
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    src = fixtures.write_jsonl(fixtures.pi_rows(), tmp_path / "pi.jsonl")
    build_rl(src, tmp_path / "out")
    cfg = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 1024, "filter_overlong_prompts": True,
                            "return_raw_chat": True, "truncation": "error"})
    ds = RLHFDataset(str(tmp_path / "out" / "train.parquet"), tokenizer, cfg)
    item = ds[0]
    assert item["raw_prompt"][0]["role"] == "system"
    assert item["extra_info"]["tools_kwargs"]["code_interpreter"]["create_kwargs"]["problem_id"]
    assert item["agent_name"] == "tool_agent"


def test_sft_builder_and_verls_multiturn_dataset(tmp_path, tokenizer):
    from omegaconf import OmegaConf
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    src = fixtures.write_jsonl(fixtures.sft_rows(), tmp_path / "sft.jsonl")
    report = build_sft(src, tmp_path / "out")
    assert report.read == 6 and report.kept == 2
    assert set(report.dropped) == {"last assistant message has \\boxed", "no assistant tool call",
                                   "calls a tool other than code_interpreter", "messages does not parse"}
    rows = pq.read_table(tmp_path / "out" / "train.parquet").to_pylist()
    call = next(m for m in rows[0]["messages"] if m.get("tool_calls"))["tool_calls"][0]
    assert isinstance(call["function"]["arguments"], str) and "code" in json.loads(call["function"]["arguments"])
    cfg = OmegaConf.create({"messages_key": "messages", "tools_key": "tools", "max_length": 2048, "truncation": "error",
                            "pad_mode": "no_padding"})
    ds = MultiTurnSFTDataset(str(tmp_path / "out" / "train.parquet"), tokenizer, cfg)
    item = ds[0]
    trained = tokenizer.decode([t for t, m in zip(item["input_ids"].tolist(), item["loss_mask"].tolist(), strict=True) if m])
    assert "<tool_call>" in trained and "```python" in trained and "You are helpful" not in trained


def test_lcb_window_release_and_restricted_unpickler(tmp_path, judge):
    fixtures.write_jsonl(fixtures.lcb_rows(), tmp_path / "lcb" / "test5.jsonl")
    report = build_lcb(str(tmp_path / "lcb"), tmp_path / "out", release="v5")
    assert report.kept == 2  # both window ends inclusive; before/after dropped
    assert report.dropped["outside the date window"] == 2
    assert report.dropped["tests unreadable"] == 1 and "refusing to load" in report.examples["tests unreadable"]
    assert not Path("/tmp/coderl-pwned").exists()
    problems = [json.loads(line) for line in (tmp_path / "out" / "problems.jsonl").read_text().splitlines()]
    fn = next(p for p in problems if p["fn_name"])
    assert fn["fn_name"] == "countPairs" and "starter code" in fn["prompt"][1]["content"]
    assert len(json.loads(fn["tests"])["cases"]) == 2  # public + decoded private
    code = ("class Solution:\n    def countPairs(self, nums, target):\n"
            "        return sum(nums[i] + nums[j] < target for i in range(len(nums)) for j in range(i + 1, len(nums)))")
    assert judge(Submission(code=code, spec=fn["tests"])).accepted
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert meta["problems"] == 2 and meta["release"] == "v5"


@needs_shared_data
def test_lcb_builds_from_sandboxfusion_rows_with_the_date_filter_off(tmp_path, judge):
    """The LiveCodeBench rows in ../shared/data (SandboxFusion's copy: no contest_date) are refused
    under the default window with the way out named, and build with --no-date-filter / `all`."""
    source = SHARED / "sandboxfusion-samples" / "code_eval_live_code_bench_v1.jsonl"
    with pytest.raises(BadRequest, match="--no-date-filter"):
        build_lcb(str(source), tmp_path / "refused")
    report = build_lcb(str(source), tmp_path / "out", start_date="all", end_date=None)
    assert report.kept == 3
    problems = {p["question_id"]: p for p in map(json.loads, (tmp_path / "out" / "problems.jsonl").open())}
    leetcode = problems["leetcode/2727"]
    assert leetcode["fn_name"] == "countSeniors" and leetcode["starter_code"].startswith("class Solution:")
    assert leetcode["platform"] == "leetcode" and leetcode["difficulty"] == "easy"
    assert "### Format" not in leetcode["question_content"]
    code = "class Solution:\n    def countSeniors(self, details):\n        return sum(int(d[11:13]) > 60 for d in details)"
    assert judge(Submission(code=code, spec=leetcode["tests"])).accepted
    done = subprocess.run([sys.executable, "-m", "coderl.cli", "data", "lcb", "--source", str(source), "--out",
                           str(tmp_path / "cli"), "--no-date-filter"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "kept 3" in done.stdout, done.stderr


@pytest.mark.parametrize("release,files", [("release_v5", 5), ("release_latest", 6), ("v5", 1), ("v4_v5", 2)])
def test_release_names(release, files):
    assert len(release_files(release)) == files
    with pytest.raises(BadRequest):
        release_files("v9")


@needs_shared_data
def test_real_mbpp_and_humaneval_rows_build_and_pass(tmp_path, judge):
    from coderl.data.evalsets import build_evalset

    build_evalset("mbpp", str(SHARED / "sandboxfusion-samples" / "code_eval_mbpp.jsonl"), tmp_path / "mbpp", fmt="eval")
    rows = [json.loads(line) for line in (tmp_path / "mbpp" / "problems.jsonl").read_text().splitlines()]
    assert len(rows) == 20
    assert all(r.accepted for r in judge([Submission(code=r["solution"], spec=r["tests"]) for r in rows]))
    report = build_evalset("humaneval", None, tmp_path / "he", fmt="rl", limit=10)
    assert report.kept == 10


def test_cli_reports_and_bad_input(tmp_path):
    src = fixtures.write_jsonl(fixtures.pi_rows(), tmp_path / "pi.jsonl")
    run = subprocess.run([sys.executable, "-m", "coderl.cli", "data", "rl", "--source", src, "--out", str(tmp_path / "o"),
                          "--limit", "4"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "rl: read 4, kept 3" in run.stdout and "exact duplicate" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "coderl.cli", "data", "lcb", "--source", str(tmp_path), "--out",
                          str(tmp_path / "l"), "--release", "v9"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown LiveCodeBench release" in bad.stderr and "Traceback" not in bad.stderr
    for args, needle in ((["rl", "--val-fraction", "1.5"], "--val-fraction: must be in [0, 1)"),
                         (["lcb", "--limit", "-1"], "--limit: must be at least 1")):
        wrong = subprocess.run([sys.executable, "-m", "coderl.cli", "data", args[0], "--source", src, "--out",
                                str(tmp_path / "w"), *args[1:]], capture_output=True, text=True, timeout=120)
        assert wrong.returncode == 2 and needle in wrong.stderr and wrong.stderr.count("\n") == 1


@needs_shared_data
def test_real_rows_of_every_eval_source_build_and_humaneval_golds_pass(tmp_path, judge):
    from coderl.data.evalsets import build_evalset

    counts = {}
    for name, path in [("rllm code_contests", SHARED / "rllm-test" / "code_contests.json"),
                       ("rllm codeforces", SHARED / "rllm-test" / "codeforces.json"),
                       ("sandboxfusion code_contests", SHARED / "sandboxfusion-samples" / "code_eval_code_contests.jsonl")]:
        report = build_evalset("code_contests", str(path), tmp_path / name.replace(" ", "_"), fmt="eval")
        counts[name] = (report.read, report.kept, dict(report.dropped))
    assert counts == {"rllm code_contests": (165, 163, {"unsupported problem (interactive)": 2}),
                      "rllm codeforces": (408, 392, {"unsupported problem (interactive)": 16}),
                      "sandboxfusion code_contests": (20, 20, {})}
    build_evalset("humaneval", None, tmp_path / "he", fmt="eval")
    rows = [json.loads(line) for line in (tmp_path / "he" / "problems.jsonl").read_text().splitlines()]
    assert len(rows) == 164
    results = judge([Submission(code=r["solution"], spec=r["tests"], fn_name=r.get("fn_name")) for r in rows])
    assert [r["question_id"] for r, res in zip(rows, results, strict=True) if not res.accepted] == []


def test_malformed_rows_are_counted_not_fatal(tmp_path):
    from coderl.data.evalsets import build_evalset

    good = {"name": "ok", "description": "echo", "public_tests": {"input": ["1\n"], "output": ["1\n"]},
            "private_tests": {"input": [], "output": []}, "generated_tests": {"input": [], "output": []},
            "solutions": {"language": [3], "solution": ["print(input())"]}}
    bad = {**good, "name": "bad", "solutions": "not a dict"}
    src = fixtures.write_jsonl([good, bad], tmp_path / "cc.jsonl")
    report = build_evalset("code_contests", src, tmp_path / "cc", fmt="eval")
    assert report.kept == 1 and report.dropped == {"malformed row (AttributeError)": 1}
    no_tests = fixtures.pi_row("p9", "Print it.", tests=[])
    rl = build_rl(fixtures.write_jsonl([no_tests, *fixtures.pi_rows()], tmp_path / "pi.jsonl"), tmp_path / "rl",
                  min_tests=0)
    assert rl.dropped.get("fewer than 1 tests") == 1


def test_unwrapped_statement_is_what_decontamination_compares():
    from coderl.data.rl import unwrapped

    assert unwrapped(fixtures.PI_WRAPPER.format(statement="Add two numbers.\n\nInput: a b")) == "Add two numbers.\n\nInput: a b"
    assert unwrapped("A plain statement.") == "A plain statement."
