"""The figures, drawn through `coderl plot` from checked-in example logs in the exact formats verl
0.9.1 writes (file logger, rollout dumps with our reward's extras) and the results table.

``CODERL_UPDATE_FIGURES=1 pytest tests/plots`` regenerates the example logs and figures/*.png."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from coderl.errors import BadRequest
from coderl.plots.evaluation import RECIPE_REPORTED, plot_evaluation
from coderl.plots.training import plot_training, read_metrics, read_rollouts

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "eval"
UPDATE = bool(os.environ.get("CODERL_UPDATE_FIGURES"))
NOTE = "EXAMPLE DATA, not a training run"  # the checked-in figures show the layout, not results


def write_example_logs(directory: Path) -> None:
    """Deterministic logs shaped like the recipe's run: score and tool calls rise, the response
    length runs into its 16K wall and clipping starts, tool calls settle there."""
    rng = random.Random(7)
    directory.mkdir(parents=True, exist_ok=True)
    lines = []
    for step in range(1, 161):
        x = step / 160
        length = min(16384, 3000 + 11000 * (1 - math.exp(-2.5 * x)) + rng.gauss(0, 500))
        data = {"critic/score/mean": round(0.2 + 0.28 * x + rng.gauss(0, 0.03), 4),
                "response_length/mean": round(length, 1),
                "response_length/clip_ratio": round(max(0.0, (length - 11500) / 30000 + rng.gauss(0, 0.005)), 4),
                "num_turns/mean": round(4 + 5 * (1 - math.exp(-4 * x)) + rng.gauss(0, 0.2), 3),
                "training/global_step": step, "training/epoch": step // 11}
        if step % 20 == 0:
            data["val-core/primeintellect/acc/mean@1"] = round(0.22 + 0.25 * x + rng.gauss(0, 0.02), 4)
        lines.append(json.dumps({"step": step, "data": data}))
    (directory / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    rollouts = directory / "rollouts"
    rollouts.mkdir(exist_ok=True)
    for step in range(10, 161, 10):
        x = step / 160
        weights = {"accepted": 0.2 + 0.28 * x, "wrong_answer": 0.35 - 0.1 * x, "runtime_error": 0.15 - 0.05 * x,
                   "time_limit": 0.08, "no_code": 0.15 - 0.12 * x, "compile_error": 0.02, "sandbox_error": 0.005}
        rows = []
        for prompt in range(16):
            easy = prompt % 4 == 0
            for _ in range(4):
                verdict = "accepted" if easy and rng.random() < 0.8 else rng.choices(list(weights), list(weights.values()))[0]
                rows.append(_reward_row(f"problem {prompt}", step, verdict, rng.randint(1, 2 + round(4 * min(1, 1.6 * x)))))
        (rollouts / f"{step}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = ["step,pass@1,easy,medium,hard"]
    for step, reported in RECIPE_REPORTED.items():
        ours = reported + rng.gauss(0.5, 0.8)
        table.append(f"{step},{ours:.2f},{min(100, ours * 2.3):.2f},{ours * 0.8:.2f},{ours * 0.12:.2f}")
    (directory / "results.csv").write_text("\n".join(table) + "\n")


def _reward_row(prompt: str, step: int, verdict: str, tool_calls: int) -> dict:
    """One line of verl's rollout dump: input, output, gts, score, step, then every reward extra
    coderl.verl.reward returns."""
    from coderl.verl.reward import VERDICT_KEYS

    ok = verdict == "accepted"
    return {"input": prompt, "output": "...", "gts": "{}", "score": float(ok), "step": step, "acc": float(ok),
            "verdict": verdict, "tests_passed": 3 if ok else 1, "tests_total": 3, "pass_rate": 1.0 if ok else 1 / 3,
            "sandbox_error": int(verdict == "sandbox_error"), "has_code": int(verdict != "no_code"),
            "extraction": "fence:python", "tool_calls": tool_calls, "num_turns": 2 + 2 * tool_calls,
            **{k: int(k == f"verdict_{verdict}") for k in VERDICT_KEYS}}


@pytest.fixture(scope="module")
def logs() -> Path:
    if UPDATE:
        write_example_logs(FIXTURES)
    return FIXTURES


def coderl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coderl.cli", *args], capture_output=True, text=True, timeout=300)


# slow (CI runs it; two `coderl plot` processes, 40 s of the default suite at load ~25): the default suite
# draws the training figure in process (below). Issue 46: the default suite under 15 minutes.
@pytest.mark.slow
def test_figures_from_example_logs(logs, tmp_path):
    out = ROOT / "figures" if UPDATE else tmp_path
    train = coderl("plot", "training", "--metrics", str(logs / "metrics.jsonl"), "--rollouts", str(logs / "rollouts"),
                   "--out", str(out / "training_progress.png"), "--note", NOTE)
    assert train.returncode == 0, train.stderr
    evaluation = coderl("plot", "eval", "--results", str(logs / "results.csv"), "--out",
                        str(out / "evaluation_progress.png"), "--with-recipe", "--note", NOTE)
    assert evaluation.returncode == 0, evaluation.stderr
    for name in ("training_progress.png", "evaluation_progress.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_series_read_from_verl_formats(logs):
    metrics = read_metrics(logs / "metrics.jsonl")
    assert len(metrics["critic/score/mean"]) == 160 and len(metrics["val-core/primeintellect/acc/mean@1"]) == 8
    rates = read_rollouts(logs / "rollouts")
    assert {"verdict/accepted", "verdict/no_code", "zero_variance_groups", "tool_calls/mean"} <= set(rates)
    for step in range(len(rates["verdict/accepted"])):  # the shares of one step add up to 1
        assert sum(rates[k][step][1] for k in rates if k.startswith("verdict/")) == pytest.approx(1.0)


def test_repository_episodes_count_by_grade_status_apart_from_verdicts(tmp_path):
    """An agent episode on a repository task carries a grade status, a code sample a verdict: one
    step of both stacks each under its own name (``sandbox_error`` is both a verdict and a grade
    status, and stays two series), the shares adding up to 1, and the figure draws."""
    rows = [{"input": "p", "score": 1.0, "verdict": "accepted"}, {"input": "p", "score": 0.0, "verdict": "sandbox_error"},
            {"input": "t", "score": 1.0, "verdict": "", "grade_status": "resolved"},
            {"input": "t", "score": 0.0, "verdict": "", "grade_status": "sandbox_error"}]
    (tmp_path / "rollouts").mkdir()
    (tmp_path / "rollouts" / "1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rates = read_rollouts(tmp_path / "rollouts")
    shares = {k: v for k, v in rates.items() if k.startswith(("verdict/", "grade_status/"))}
    assert shares == {"verdict/accepted": [(1, 0.25)], "verdict/sandbox_error": [(1, 0.25)],
                      "grade_status/resolved": [(1, 0.25)], "grade_status/sandbox_error": [(1, 0.25)]}
    (tmp_path / "m.jsonl").write_text(json.dumps({"step": 1, "data": {"critic/score/mean": 0.5}}) + "\n")
    assert Path(plot_training(tmp_path / "m.jsonl", tmp_path / "t.png", tmp_path / "rollouts")).stat().st_size > 20_000


def test_checked_in_figures_exist():
    for name in ("training_progress.png", "evaluation_progress.png"):
        assert (ROOT / "figures" / name).stat().st_size > 20_000


def test_metrics_alone_draw_and_say_what_is_missing(logs, tmp_path):
    assert Path(plot_training(logs / "metrics.jsonl", tmp_path / "t.png")).stat().st_size > 20_000


def test_bad_logs_are_clear_errors(tmp_path):
    bad = tmp_path / "m.jsonl"
    bad.write_text("garbage\n")
    with pytest.raises(BadRequest, match="not a verl file-logger line"):
        plot_training(bad, tmp_path / "x.png")
    csv = tmp_path / "r.csv"
    csv.write_text("a,b\n1,2\n")
    with pytest.raises(BadRequest, match="step and pass@1"):
        plot_evaluation(csv, tmp_path / "y.png")
    done = coderl("plot", "training", "--metrics", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "z.png"))
    assert done.returncode == 2 and "VERL_FILE_LOGGER_PATH" in done.stderr and done.stderr.count("\n") == 1


def test_figure_without_out_lands_beside_its_input(tmp_path):
    """Trying the command on the example inputs must not overwrite the tracked figures/*.png."""
    fixtures = ROOT / "tests" / "fixtures" / "eval"
    (tmp_path / "results.csv").write_bytes((fixtures / "results.csv").read_bytes())
    tracked = (ROOT / "figures" / "evaluation_progress.png").stat().st_mtime_ns
    done = coderl("plot", "eval", "--results", str(tmp_path / "results.csv"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "evaluation_progress.png").stat().st_size > 20_000
    assert (ROOT / "figures" / "evaluation_progress.png").stat().st_mtime_ns == tracked
