"""training_progress.png from what verl 0.9.1 writes: the `file` logger's metrics JSONL
(``{"step": N, "data": {...}}`` per step) and, when given, the per-step rollout dumps
(``trainer.rollout_data_dir/<step>.jsonl`` with every sample's score and reward extras)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from coderl.errors import BadRequest

VERDICTS = ("accepted", "wrong_answer", "time_limit", "memory_limit", "runtime_error", "compile_error",
            "output_limit", "sandbox_error")


def read_metrics(path: str | Path) -> dict[str, list[tuple[int, float]]]:
    series: dict[str, list[tuple[int, float]]] = defaultdict(list)
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"metrics file not found: {path}")
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            step, data = int(row["step"]), row["data"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise BadRequest(f"{path}:{n}: not a verl file-logger line {{step, data}}") from None
        for key, value in data.items():
            if isinstance(value, int | float):
                series[key].append((step, float(value)))
    if not series:
        raise BadRequest(f"{path}: no metrics in it")
    return series


def read_rollouts(directory: str | Path) -> dict[str, list[tuple[int, float]]]:
    """Per-step verdict rates and the share of zero-variance groups (same prompt, same score)."""
    series: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for f in sorted(Path(directory).glob("*.jsonl"), key=lambda p: int(p.stem) if p.stem.isdigit() else -1):
        if not f.stem.isdigit():
            continue
        rows = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not rows:
            continue
        step = int(f.stem)
        for v in VERDICTS:
            series[f"verdict/{v}"].append((step, mean(float(r.get("verdict") == v) for r in rows)))
        groups: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            groups[str(r.get("input"))].append(float(r.get("score", 0.0)))
        multi = [g for g in groups.values() if len(g) > 1]
        if multi:
            series["zero_variance_groups"].append((step, mean(float(len(set(g)) == 1) for g in multi)))
        series["tool_calls/mean"].append((step, mean(float(r.get("tool_calls", 0)) for r in rows)))
    return series


def plot_training(metrics: str | Path, out: str | Path, rollouts: str | Path | None = None, *,
                  note: str | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = read_metrics(metrics)
    if rollouts:
        s.update(read_rollouts(rollouts))
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), constrained_layout=True)
    _line(axes[0][0], s, ["critic/score/mean", "val-core/livecodebench/acc/mean@1"], "score", "Score on training data")
    ax = axes[0][1]
    _line(ax, s, ["response_length/mean"], "tokens", "Response length and truncation")
    if "response_length/clip_ratio" in s:
        twin = ax.twinx()
        _line(twin, s, ["response_length/clip_ratio"], "clip ratio", None, style="--", color="tab:red")
        twin.legend(fontsize=7, loc="lower right")
    _line(axes[1][0], s, ["num_turns/mean", "tool_calls/mean"], "per sample", "Turns and tool calls")
    _line(axes[1][1], s, [f"verdict/{v}" for v in VERDICTS] + ["zero_variance_groups"], "share of samples",
          "Verdicts and zero-variance groups")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.suptitle("coderl: multi-turn code RL progress" + (f" ({note})" if note else ""))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return str(out)


def _line(ax: Any, series: dict, keys: list[str], ylabel: str, title: str | None, style: str = "-",
          color: str | None = None) -> None:
    drawn = False
    for key in keys:
        if key in series and series[key]:
            steps, values = zip(*sorted(series[key]), strict=True)
            ax.plot(steps, values, style, label=key, color=color, marker="." if len(steps) < 40 else None)
            drawn = True
    if title:
        ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    if drawn:
        ax.legend(fontsize=7, loc="best")
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
