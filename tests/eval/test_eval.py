"""LiveCodeBench evaluation end to end: a fake OpenAI server on loopback, the real sandbox service,
per-sample JSONL, summary, resume; pass@k against hand-computed values."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coderl.eval.passk import mean_pass_at_k, pass_at_k
from tests.eval.fake_openai import make_server
from tests.helpers.service import free_port, running_service


def problems_file(tmp_path) -> str:
    def stdin_problem(qid, tag, difficulty, platform, tests):
        return {"question_id": qid, "question_title": qid, "platform": platform, "difficulty": difficulty,
                "contest_date": "2024-09-01T00:00:00", "starter_code": "", "fn_name": None,
                "question_content": f"[{tag}] problem", "prompt": [{"role": "user", "content": f"[{tag}] problem"}],
                "tests": json.dumps({"mode": "stdio", "cases": [{"input": i, "output": o} for i, o in tests]})}

    rows = [stdin_problem("p1", "sum", "easy", "atcoder", [("1 2\n", "3\n"), ("2 2\n", "4\n")]),
            stdin_problem("p2", "wrong", "medium", "codeforces", [("1 2\n", "3\n")]),
            stdin_problem("p3", "nocode", "hard", "leetcode", [("1\n", "1\n")]),
            stdin_problem("p4", "slow", "easy", "atcoder", [("21\n", "42\n")])]
    d = tmp_path / "lcb"
    d.mkdir(exist_ok=True)
    (d / "problems.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "meta.json").write_text(json.dumps({"release": "release_v5", "start_date": "2024-08-01", "end_date": "2025-02-01"}))
    return str(d)


def coderl(*args):
    return subprocess.run([sys.executable, "-m", "coderl.cli", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def service():
    with running_service(slots=2) as url:
        yield url


def test_end_to_end_with_fake_model_and_real_sandbox(tmp_path, service):
    port = free_port()
    server = make_server(port)
    try:
        out = tmp_path / "run"
        done = coderl("eval", "lcb", "--problems", problems_file(tmp_path), "--out", str(out), "--base-url",
                      f"http://127.0.0.1:{port}/v1", "--model", "fake", "--sandbox-url", service, "--n", "2")
        assert done.returncode == 0, done.stderr[-2000:]
        summary = json.loads((out / "summary.json").read_text())
        assert summary["overall"]["pass@1"] == 50.0 and summary["overall"]["pass@2"] == 50.0
        assert summary["by_difficulty"]["easy"]["pass@1"] == 100.0 and summary["by_difficulty"]["hard"]["pass@1"] == 0.0
        assert summary["extraction_failures"] == 2 and summary["sandbox_errors_excluded"] == 0
        assert summary["release"] == "release_v5" and summary["sampling"]["n"] == 2
        samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
        assert len(samples) == 8
        p1 = next(s for s in samples if s["question_id"] == "p1")
        assert p1["verdict"] == "accepted" and p1["extraction_rule"] == "fence:python" and p1["case_verdicts"] == ["accepted"] * 2
        assert "| overall | 4 | 50.00 | 50.00 |" in (out / "summary.md").read_text()
        calls = server.state["calls"]
        again = coderl("eval", "lcb", "--problems", problems_file(tmp_path), "--out", str(out), "--base-url",
                       f"http://127.0.0.1:{port}/v1", "--model", "fake", "--sandbox-url", service, "--n", "2")
        assert again.returncode == 0 and server.state["calls"] == calls  # resumed: nothing regenerated
    finally:
        server.shutdown()


def test_multi_turn_with_tool(tmp_path, service):
    port = free_port()
    server = make_server(port, flaky=False)
    try:
        out = tmp_path / "tools"
        done = coderl("eval", "lcb", "--problems", problems_file(tmp_path), "--out", str(out), "--base-url",
                      f"http://127.0.0.1:{port}/v1", "--model", "fake", "--sandbox-url", service, "--n", "1",
                      "--tools", "--limit", "1")
        assert done.returncode == 0, done.stderr[-2000:]
        sample = json.loads((out / "samples.jsonl").read_text().splitlines()[0])
        assert sample["tool_calls"] == 1 and "stdout:\n42" in sample["response"] and sample["verdict"] == "accepted"
    finally:
        server.shutdown()


def test_scoring_responses_made_elsewhere_in_process(tmp_path):
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"question_id": "p1", "responses": ["```python\nprint(3)\n```",
                                                                       "```python\nprint(sum(map(int, input().split())))\n```"]}) + "\n")
    out = tmp_path / "resp"
    done = coderl("eval", "lcb", "--problems", problems_file(tmp_path), "--out", str(out), "--backend", "responses",
                  "--responses", str(responses), "--n", "2", "--limit", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((out / "summary.json").read_text())["overall"]["pass@1"] == 50.0


def test_bad_input_is_one_line(tmp_path):
    done = coderl("eval", "lcb", "--problems", str(tmp_path / "none"), "--out", str(tmp_path / "o"), "--backend",
                  "responses", "--responses", str(tmp_path / "x.jsonl"))
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_pass_at_k_against_hand_computed_values():
    assert pass_at_k(4, 0, 1) == 0.0 and pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - (3 / 4) * (2 / 3))  # 1 - C(3,2)/C(4,2) = 0.5
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)  # 1 - C(7,5)/C(10,5)
    assert pass_at_k(5, 4, 2) == 1.0
    assert mean_pass_at_k([(4, 1), (4, 3)], 1) == pytest.approx(0.5)
    assert mean_pass_at_k([(2, 1)], 4) is None
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_eval_script_walks_every_checkpoint(tmp_path):
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for step in (40, 20, 160):
        (tmp_path / f"global_step_{step}").mkdir()
    done = subprocess.run(["bash", str(root / "scripts" / "eval_livecodebench.sh"), "--dry-run", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    steps = [line.split()[2].rstrip(":") for line in done.stdout.splitlines() if line.startswith("dry-run: step")]
    assert steps == ["20", "40", "160"]
    assert "--backend vllm" in done.stdout and "--n 4 --temperature 0.6 --top-p 0.95 --max-tokens 32768" in done.stdout
    missing = subprocess.run(["bash", str(root / "scripts" / "eval_livecodebench.sh"), str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "not found" in missing.stderr
