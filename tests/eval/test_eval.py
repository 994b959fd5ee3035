"""LiveCodeBench evaluation end to end, as a user runs it: `coderl eval lcb` against a scripted
OpenAI-compatible server on loopback, scored by the real sandbox (the service, or in-process);
per-sample JSONL, summary, resume, sandbox-error policy; pass@k against hand-computed values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coderl.eval.passk import mean_pass_at_k, pass_at_k
from coderl.eval.summary import summarise
from tests.eval.fake_openai import make_server
from tests.helpers.service import refused_url, running_service

ROOT = Path(__file__).resolve().parents[2]


def problems_dir(tmp_path: Path) -> str:
    """A `coderl data lcb`-shaped set: one problem per scripted answer."""
    def problem(qid, tag, difficulty, platform, tests):
        return {"question_id": qid, "question_title": qid, "platform": platform, "difficulty": difficulty,
                "contest_date": "2024-09-01T00:00:00", "starter_code": "", "fn_name": None,
                "question_content": f"[{tag}] problem", "prompt": [{"role": "system", "content": "plain"},
                                                                   {"role": "user", "content": f"[{tag}] problem"}],
                "tests": json.dumps({"mode": "stdio", "cases": [{"input": i, "output": o} for i, o in tests]})}

    rows = [problem("p1", "sum", "easy", "atcoder", [("1 2\n", "3\n"), ("2 2\n", "4\n")]),
            problem("p2", "wrong", "medium", "codeforces", [("1 2\n", "3\n")]),
            problem("p3", "nocode", "hard", "leetcode", [("1\n", "1\n")]),
            problem("p4", "slow", "easy", "atcoder", [("21\n", "42\n")]),
            problem("p5", "broken", "medium", "atcoder", [("1\n", "1\n")])]
    d = tmp_path / "lcb"
    d.mkdir(exist_ok=True)
    (d / "problems.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "meta.json").write_text(json.dumps({"release": "release_v5", "start_date": "2024-08-01",
                                             "end_date": "2025-02-01"}))
    return str(d)


def coderl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coderl.cli", *args], capture_output=True, text=True, timeout=600)


def samples(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def service():
    with running_service(slots=2) as url:
        yield url


@pytest.fixture()
def model():
    server = make_server(0)  # the kernel's free port, bound at once
    yield server, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_end_to_end_with_fake_model_and_real_service(tmp_path, service, model):
    server, base_url = model
    out = tmp_path / "run"
    argv = ("eval", "lcb", "--problems", problems_dir(tmp_path), "--out", str(out), "--base-url", base_url,
            "--model", "fake", "--sandbox-url", service, "--n", "2")
    done = coderl(*argv)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    # p1 and p4 right in both samples, p2 wrong, p3 no code, p5 a syntax error: 2 of 5 problems
    assert summary["overall"] == {"problems": 5, "pass@1": 40.0, "pass@2": 40.0}
    assert summary["by_difficulty"]["easy"]["pass@1"] == 100.0 and summary["by_difficulty"]["hard"]["pass@1"] == 0.0
    assert list(summary["by_difficulty"]) == ["easy", "medium", "hard"]
    assert summary["by_platform"]["atcoder"] == {"problems": 3, "pass@1": 66.67, "pass@2": 66.67}
    assert summary["extraction_failures"] == 2 and summary["sandbox_errors_excluded"] == 0 and summary["truncated"] == 2
    assert summary["verdicts"]["accepted"] == 4 and summary["verdicts"]["wrong_answer"] == 2
    assert summary["release"] == "release_v5" and summary["start_date"] == "2024-08-01"
    assert summary["sampling"] == {"n": 2, "temperature": 0.6, "top_p": 0.95, "max_tokens": 32768}
    recs = samples(out)
    assert len(recs) == 10
    p1 = next(s for s in recs if s["question_id"] == "p1")
    assert p1["verdict"] == "accepted" and p1["extraction_rule"] == "lcb" and "print(a + b)" in p1["code"]
    assert [c["verdict"] for c in p1["cases"]] == ["accepted"] * 2 and p1["cases"][0]["cpu_s"] >= 0
    assert p1["gen_s"] > 0 and p1["judge_s"] > 0 and p1["finish_reason"] == "stop"
    p5 = next(s for s in recs if s["question_id"] == "p5")
    assert p5["verdict"] in ("runtime_error", "compile_error")
    md = (out / "summary.md").read_text()
    assert "| **overall** | 5 | 40.00 | 40.00 |" in md and "release_v5, 2024-08-01..2025-02-01" in md
    assert "| **overall** | 5 | 40.00 | 40.00 |" in done.stdout

    calls = server.state["calls"]
    again = coderl(*argv)
    assert again.returncode == 0 and server.state["calls"] == calls  # resumed: nothing generated again
    assert len(samples(out)) == 10
    hotter = coderl(*argv, "--temperature", "1.0")
    assert hotter.returncode == 2 and "temperature differ" in hotter.stderr and server.state["calls"] == calls


def test_sandbox_errors_are_excluded_reported_then_judged_again(tmp_path, service, model):
    server, base_url = model
    out = tmp_path / "down"
    common = ("eval", "lcb", "--problems", problems_dir(tmp_path), "--out", str(out), "--base-url", base_url,
              "--model", "fake", "--n", "2", "--limit", "1")
    with refused_url() as down:
        dead = coderl(*common, "--sandbox-url", down)
    assert dead.returncode == 1 and "2 samples not scored (sandbox errors)" in dead.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sandbox_errors_excluded"] == 2 and summary["overall"] == {"problems": 0, "pass@1": None, "pass@2": None}
    assert all(s["verdict"] == "sandbox_error" and "```python" in s["response"] for s in samples(out))
    calls = server.state["calls"]
    back = coderl(*common, "--sandbox-url", service)
    assert back.returncode == 0, back.stderr[-2000:]
    assert server.state["calls"] == calls  # judged again from the stored responses, not regenerated
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sandbox_errors_excluded"] == 0 and summary["overall"]["pass@1"] == 100.0


def test_multi_turn_with_tool_in_process(tmp_path, model):
    server, base_url = model
    out = tmp_path / "tools"
    done = coderl("eval", "lcb", "--problems", problems_dir(tmp_path), "--out", str(out), "--base-url", base_url,
                  "--model", "fake", "--n", "1", "--tools", "--max-turns", "4", "--limit", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    (sample,) = samples(out)
    assert sample["tool_calls"] == 1 and sample["verdict"] == "accepted"
    assert "<tool_call>" in sample["response"] and "<tool_response>\nstatus: ok\nstdout:\n42" in sample["response"]
    first = server.state["bodies"][-2]
    assert first["tools"][0]["function"]["name"] == "code_interpreter"
    assert "code_interpreter" in first["messages"][0]["content"]  # training's tool system prompt
    assert server.state["bodies"][-1]["messages"][-1]["role"] == "tool"
    assert "with code_interpreter, at most 4 turns" in (out / "summary.md").read_text()


def test_scoring_responses_made_elsewhere_in_process(tmp_path):
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"question_id": "p1", "responses": [
        "```python\nprint(3)\n```", "<think>x</think>```python\nprint(sum(map(int, input().split())))\n```"]}) + "\n")
    out = tmp_path / "resp"
    done = coderl("eval", "lcb", "--problems", problems_dir(tmp_path), "--out", str(out), "--backend", "responses",
                  "--responses", str(responses), "--n", "2", "--limit", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((out / "summary.json").read_text())["overall"]["pass@1"] == 50.0


def test_responses_file_sets_n_and_is_refused_when_it_cannot_fill_it(tmp_path):
    """Two responses per problem score as n=2 (not as 2 of 4 with two blanks); --n above what the
    file holds, a problem without responses, or no matching question_id at all are refused; the
    summary carries no sampling settings of ours."""
    problems = problems_dir(tmp_path)
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"question_id": "p1", "responses": [
        "```python\nprint(sum(map(int, input().split())))\n```"] * 2}) + "\n"
        + json.dumps({"question_id": "elsewhere", "response": "x"}) + "\n")
    base = ("eval", "lcb", "--problems", problems, "--backend", "responses", "--responses", str(responses))
    done = coderl(*base, "--out", str(tmp_path / "a"), "--limit", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 question_ids" in done.stderr and "elsewhere" in done.stderr  # the unmatched one, warned about
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["overall"]["pass@1"] == 100.0 and summary["sampling"] == {"n": 2}
    assert "temperature" not in (tmp_path / "a" / "summary.md").read_text()
    for extra, message in ((("--limit", "1", "--n", "4"), "fewer than --n 4"),
                           ((), "4 of 5 problems have no responses"),
                           (("--start-date", "2025-01-01"), "no problems")):
        refused = coderl(*base, "--out", str(tmp_path / "b"), *extra)
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    responses.write_text(json.dumps({"question_id": "nowhere", "response": "x"}) + "\n")
    refused = coderl(*base, "--out", str(tmp_path / "c"))
    assert refused.returncode == 2 and "none of its 1 question_ids" in refused.stderr, refused.stderr


def test_unreachable_sandbox_url_is_named(tmp_path):
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"question_id": "p1", "response": "```python\nprint(3)\n```"}) + "\n")
    with refused_url() as url:
        done = coderl("eval", "lcb", "--problems", problems_dir(tmp_path), "--out", str(tmp_path / "o"), "--limit",
                      "1", "--backend", "responses", "--responses", str(responses), "--sandbox-url", url)
    assert done.returncode == 1 and url in done.stderr and "not reachable" in done.stderr, done.stderr


@pytest.mark.parametrize("extra, message", [
    (("--backend", "responses", "--responses", "/nonexistent.jsonl"), "responses file not found"),
    (("--backend", "responses", "--responses", "/nonexistent.jsonl", "--tools"), "--tools needs a model to talk to"),
    (("--model", "m"), "--base-url and --model are required"),
    (("--backend", "openai", "--base-url", "localhost:8000", "--model", "m"), "http(s):// URL"),
])
def test_bad_input_is_one_line(tmp_path, extra, message):
    done = coderl("eval", "lcb", "--problems", problems_dir(tmp_path), "--out", str(tmp_path / "o"), *extra)
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_missing_or_broken_problems_are_one_line(tmp_path):
    """Once, not once per case above (each run is a CLI process: issue 46, the default suite's time)."""
    missing = coderl("eval", "lcb", "--problems", str(tmp_path / "none"), "--out", str(tmp_path / "o"))
    assert missing.returncode == 2 and "coderl data lcb" in missing.stderr and "Traceback" not in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question_id": "x"}) + "\n")
    broken = coderl("eval", "lcb", "--problems", str(bad), "--out", str(tmp_path / "o"))
    assert broken.returncode == 2 and "bad.jsonl:1" in broken.stderr and broken.stderr.count("\n") == 1


def test_pass_at_k_against_hand_computed_values():
    assert pass_at_k(4, 0, 1) == 0.0 and pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)  # 1 - C(2,2)/C(4,2) = 1 - 1/6
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)  # 1 - C(7,5)/C(10,5)
    assert pass_at_k(5, 4, 2) == 1.0
    assert mean_pass_at_k([(4, 1), (4, 3)], 1) == pytest.approx(0.5)
    assert mean_pass_at_k([(2, 1)], 4) is None
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_summary_counts_by_group_and_excludes_sandbox_errors():
    problems = [{"question_id": "a", "difficulty": "easy", "platform": "atcoder"},
                {"question_id": "b", "difficulty": "hard", "platform": "leetcode"}]
    verdicts = {"a": ["accepted", "wrong_answer", "accepted", "no_code"],
                "b": ["accepted", "sandbox_error", "time_limit", "time_limit"]}
    records = [{"question_id": q, "sample": i, "verdict": v, "finish_reason": "length" if v == "no_code" else "stop"}
               for q, vs in verdicts.items() for i, v in enumerate(vs)]
    s = summarise(problems, records, 4, {"sampling": {"n": 4}})
    # a: c=2 of 4; b: c=1 of the 3 scored samples (the sandbox error is not a sample)
    assert s["overall"]["pass@1"] == pytest.approx(100 * (2 / 4 + 1 / 3) / 2, abs=0.01)
    assert s["overall"]["pass@2"] == pytest.approx(100 * ((1 - 1 / 6) + (1 - 1 / 3)) / 2, abs=0.01)
    assert s["overall"]["pass@4"] == pytest.approx(100.0)  # only a has 4 scored samples
    assert s["by_difficulty"]["hard"] == {"problems": 1, "pass@1": 33.33, "pass@2": 66.67, "pass@4": None}
    assert s["sandbox_errors_excluded"] == 1 and s["extraction_failures"] == 1 and s["truncated"] == 1
    assert s["samples_scored"] == 7 and s["samples_expected"] == 8 and s["missing"] == 0


def test_eval_script_walks_every_checkpoint(tmp_path):
    for step in (40, 20, 160):
        (tmp_path / f"global_step_{step}").mkdir()
    script = str(ROOT / "scripts" / "eval_livecodebench.sh")
    done = subprocess.run(["bash", script, "--dry-run", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    evals = [line for line in done.stdout.splitlines() if line.startswith("dry-run: step") and " eval lcb " in line]
    assert [line.split()[2].rstrip(":") for line in evals] == ["20", "40", "160"]
    assert "merge_checkpoint.sh" in done.stdout and "global_step_20/huggingface_merged" in done.stdout
    assert "--backend vllm" in done.stdout and "--n 4 --temperature 0.6 --top-p 0.95 --max-tokens 32768" in done.stdout
    missing = subprocess.run(["bash", script, str(tmp_path / "nope")], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "not found" in missing.stderr


def test_eval_script_goes_on_after_a_failed_checkpoint(tmp_path):
    """One checkpoint whose evaluation fails does not stop the others; the script names it and
    exits non-zero at the end."""
    for step in (20, 40):
        (tmp_path / f"global_step_{step}").mkdir()
        (tmp_path / f"global_step_{step}" / "config.json").write_text("{}")
    problems = tmp_path / "problems.jsonl"
    problems.write_text("")
    env = {**os.environ, "PROBLEMS": str(problems), "BACKEND": "responses", "SANDBOX_URL": "",
           "OUT_DIR": str(tmp_path / "out")}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "eval_livecodebench.sh"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "== step 20" in done.stdout and "== step 40" in done.stdout
    assert "evaluation failed for step(s): 20 40" in done.stderr


@pytest.fixture(scope="module")
def built_lcb(tmp_path_factory) -> Path:
    """`coderl data lcb` over the fixture's raw rows (release v5), built once for the tests that read it."""
    from tests.data.fixtures import lcb_rows, write_jsonl

    root = tmp_path_factory.mktemp("built-lcb")
    raw = write_jsonl(lcb_rows(), root / "raw" / "test5.jsonl")
    built = coderl("data", "lcb", "--source", raw, "--out", str(root / "lcb"), "--release", "v5")
    assert built.returncode == 0, built.stderr[-2000:]
    return root / "lcb"


def test_extraction_rules_lcb_by_default_and_coderl_on_request(tmp_path, built_lcb):
    """A cut-off answer (an unterminated fence) and a fence-less program score 0 under
    LiveCodeBench's rule, the default; the reward's rule, asked for, scores them."""
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"question_id": "abc999_a", "responses": [
        "Here:\n```python\nprint(sum(map(int, input().split())))\n",
        "print(sum(map(int, input().split())))",
        "```python\nprint(sum(map(int, input().split())))\n```"]}) + "\n")
    rules = {}
    for rule in ("lcb", "coderl"):
        done = coderl("eval", "lcb", "--problems", str(built_lcb), "--out", str(tmp_path / rule), "--backend",
                      "responses", "--responses", str(responses), "--n", "3", "--limit", "1", "--extraction", rule)
        assert done.returncode == 0, done.stderr[-2000:]
        recs = sorted(samples(tmp_path / rule), key=lambda r: r["sample"])
        rules[rule] = [(r["verdict"], r["extraction_rule"]) for r in recs]
        assert json.loads((tmp_path / rule / "summary.json").read_text())["extraction"] == rule
    assert rules["lcb"] == [("no_code", None), ("no_code", None), ("accepted", "lcb")]
    assert rules["coderl"] == [("accepted", "fence:open"), ("accepted", "raw"), ("accepted", "fence:python")]


def test_bad_arguments_get_one_line():
    done = coderl("eval", "lcb", "--problems", "x", "--out", "y", "--n", "0")
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0, done.stderr
    assert "--n" in done.stderr and "see coderl eval lcb --help" in done.stderr


def test_results_table_keeps_one_row_per_step(tmp_path):
    """`coderl eval record`, which the script runs after each checkpoint: a step evaluated again
    replaces its row; rows stay in step order."""
    results = tmp_path / "results.csv"
    for step, value in (("20", 13.0), ("0", 12.0), ("20", 14.5)):
        summary = tmp_path / f"s{step}.json"
        summary.write_text(json.dumps({"overall": {"pass@1": value}, "by_difficulty": {
            "easy": {"pass@1": value * 2}, "hard": {"pass@1": None}}}))
        done = coderl("eval", "record", "--summary", str(summary), "--step", step, "--results", str(results))
        assert done.returncode == 0, done.stderr
    assert results.read_text().splitlines() == ["step,pass@1,easy,medium,hard", "0,12.00,24.00,,", "20,14.50,29.00,,"]
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"overall": {"pass@1": None}}))
    refused = coderl("eval", "record", "--summary", str(empty), "--step", "40", "--results", str(results))
    assert refused.returncode == 2 and "no problem was scored" in refused.stderr


def test_lcb_builder_output_and_raw_rows_end_to_end(tmp_path, built_lcb):
    """The contract with `coderl data lcb`: its output (and raw LiveCodeBench rows) evaluate as is,
    stdin and LeetCode functional problems alike, with the window from its meta.json."""
    from tests.data.fixtures import lcb_rows, write_jsonl

    responses = tmp_path / "r.jsonl"
    responses.write_text("".join(json.dumps(r) + "\n" for r in [
        {"question_id": "abc999_a", "response": "```python\nprint(sum(map(int, input().split())))\n```"},
        {"question_id": "3314", "response": "```python\nclass Solution:\n    def countPairs(self, nums, target):\n"
                                            "        return sum(nums[i] + nums[j] < target for i in range(len(nums))"
                                            " for j in range(i + 1, len(nums)))\n```"}]))
    done = coderl("eval", "lcb", "--problems", str(built_lcb), "--out", str(tmp_path / "built"), "--backend",
                  "responses", "--responses", str(responses), "--n", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "built" / "summary.json").read_text())
    assert summary["release"] == "v5" and summary["start_date"] == "2024-08-01" and summary["end_date"] == "2025-02-01"
    assert summary["problems"] == 2 and summary["overall"]["pass@1"] == 100.0
    # the Evil row's pickle is refused by the builder; raw rows go through the same adapter here
    safe = write_jsonl([r for r in lcb_rows() if r["question_id"] in ("abc999_a", "3314")], tmp_path / "safe.jsonl")
    again = coderl("eval", "lcb", "--problems", safe, "--out", str(tmp_path / "raw_out"), "--backend", "responses",
                   "--responses", str(responses), "--n", "1")
    assert again.returncode == 0, again.stderr[-2000:]
    raw_summary = json.loads((tmp_path / "raw_out" / "summary.json").read_text())
    assert raw_summary["overall"]["pass@1"] == 100.0 and raw_summary["release"] == "rows of safe.jsonl"
    assert (raw_summary["start_date"], raw_summary["end_date"]) == ("2024-08-01", "2025-02-01")  # the recipe's


def test_date_window_of_raw_and_built_problems(tmp_path):
    """Raw LiveCodeBench rows get the recipe's window unless given one; a built set keeps its own
    unless given one; both ends inclusive, at midnight as LiveCodeBench parses them."""
    from coderl.errors import BadRequest
    from coderl.eval.lcb import load_problems
    from tests.data.fixtures import lcb_rows, write_jsonl

    raw = write_jsonl([r for r in lcb_rows() if r["question_id"] != "abc999_e"], tmp_path / "raw.jsonl")
    ids = lambda problems: sorted(p["question_id"] for p in problems)  # noqa: E731
    problems, meta = load_problems(raw)
    assert ids(problems) == ["3314", "abc999_a"] and meta["start_date"] == "2024-08-01"
    problems, meta = load_problems(raw, start_date="2024-08-01", end_date="2025-03-01")
    assert ids(problems) == ["2000_A", "3314", "abc999_a"] and meta["end_date"] == "2025-03-01"
    assert ids(load_problems(raw, limit=1)[0]) == ["abc999_a"]
    built = tmp_path / "built"
    assert coderl("data", "lcb", "--source", raw, "--out", str(built), "--start-date", "2024-01-01",
                  "--end-date", "2025-12-31").returncode == 0
    assert len(load_problems(str(built))[0]) == 3  # the builder drops the test-less "Early" row
    assert ids(load_problems(str(built), end_date="2024-12-31")[0]) == ["abc999_a"]
    with pytest.raises(BadRequest, match="YYYY-MM-DD"):
        load_problems(raw, start_date="August")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(BadRequest, match="bad.jsonl:1: not a JSON object"):
        load_problems(str(bad))
