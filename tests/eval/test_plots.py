"""The figures, drawn from example logs in the exact formats verl 0.9.1 writes."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from coderl.errors import BadRequest
from coderl.plots.evaluation import RECIPE_REPORTED, plot_evaluation
from coderl.plots.training import plot_training, read_rollouts

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "plots"


def example_logs(directory: Path) -> tuple[Path, Path, Path]:
    """Deterministic example data shaped like a run: verl's file logger, rollout dumps, results."""
    directory.mkdir(parents=True, exist_ok=True)
    metrics = directory / "metrics.jsonl"
    with metrics.open("w") as fh:
        for step in range(1, 161):
            x = step / 160
            fh.write(json.dumps({"step": step, "data": {
                "critic/score/mean": round(0.18 + 0.3 * x - 0.05 * math.sin(step / 7), 4),
                "response_length/mean": round(2500 + 9000 * (1 - math.exp(-3 * x)), 1),
                "response_length/clip_ratio": round(max(0.0, 0.12 * x * x - 0.01), 4),
                "num_turns/mean": round(3 + 4 * (1 - math.exp(-4 * x)), 3),
                "training/global_step": step}}) + "\n")
    rollouts = directory / "rollouts"
    rollouts.mkdir(exist_ok=True)
    for step in range(20, 161, 20):
        rows = []
        for prompt in range(8):
            for sample in range(4):
                ok = (prompt + sample + step // 20) % (9 - step // 40) == 0
                verdict = "accepted" if ok else ("wrong_answer", "time_limit", "runtime_error")[(prompt + sample) % 3]
                rows.append({"input": f"problem {prompt}", "output": "...", "score": float(ok), "step": step,
                             "verdict": verdict, "tool_calls": 2 + (sample + step // 40) % 4})
        (rollouts / f"{step}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    results = directory / "results.csv"
    lines = ["step,pass@1,easy,medium,hard"]
    for step, value in RECIPE_REPORTED.items():
        ours = value + 1.5 + step / 80
        lines.append(f"{step},{ours:.2f},{min(100, ours * 2.4):.2f},{ours * 0.8:.2f},{ours * 0.15:.2f}")
    results.write_text("\n".join(lines) + "\n")
    return metrics, rollouts, results


def test_figures_from_example_logs(tmp_path):
    metrics, rollouts, results = example_logs(FIXTURES if os.environ.get("CODERL_UPDATE_FIGURES") else tmp_path)
    out = (ROOT / "figures") if os.environ.get("CODERL_UPDATE_FIGURES") else tmp_path
    note = "EXAMPLE DATA, not a training run"  # the checked-in figures show the layout, not results
    train_png = plot_training(metrics, out / "training_progress.png", rollouts, note=note)
    eval_png = plot_evaluation(results, out / "evaluation_progress.png", reference=RECIPE_REPORTED, note=note)
    for png in (train_png, eval_png):
        data = Path(png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    rates = read_rollouts(rollouts)
    assert set(rates) >= {"verdict/accepted", "zero_variance_groups", "tool_calls/mean"}
    assert all(0.0 <= v <= 1.0 for _, v in rates["verdict/accepted"])


def test_checked_in_figures_exist():
    for name in ("training_progress.png", "evaluation_progress.png"):
        assert (ROOT / "figures" / name).stat().st_size > 20_000


def test_bad_logs_are_clear_errors(tmp_path):
    bad = tmp_path / "m.jsonl"
    bad.write_text("garbage\n")
    with pytest.raises(BadRequest, match="not a verl file-logger line"):
        plot_training(bad, tmp_path / "x.png")
    csv = tmp_path / "r.csv"
    csv.write_text("a,b\n1,2\n")
    with pytest.raises(BadRequest, match="step and pass@1"):
        plot_evaluation(csv, tmp_path / "y.png")
