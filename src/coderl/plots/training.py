"""training_progress.png from what verl 0.9.1 writes, with no patch:

- the ``file`` logger's metrics JSONL (``trainer.logger=[console,file]``; one ``{"step": N,
  "data": {...}}`` line per step at ``VERL_FILE_LOGGER_PATH``): score on training data, response
  length and clip (truncation) ratio, turns per sample, held-out accuracy;
- when given, per-step sample logs (``<dir>/<step>.jsonl``, one sample per line with ``input``
  (the prompt: the GRPO group key), ``score`` and our extras ``verdict`` (the judge's) or
  ``grade_status`` (the repository grader's, for an agent episode on a repository task) and
  ``tool_calls``), in the layout of verl's ``trainer.rollout_data_dir`` dump and of the reward's
  own sample log: verdict and grade status shares, tool calls per sample, and the share of prompt
  groups where every sample scored the same (no GRPO signal). Other files and subdirectories are
  ignored.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from coderl.errors import BadRequest
from coderl.swe.grade_status import GradeStatus

Series = dict[str, list[tuple[int, float]]]
# drawing order (bottom to top) and colours: success green, the program's failures warm, ours black
VERDICT_COLORS = {
    "accepted": "#2ca02c", "wrong_answer": "#ff7f0e", "runtime_error": "#d62728", "time_limit": "#9467bd",
    "memory_limit": "#8c564b", "output_limit": "#e377c2", "compile_error": "#bcbd22", "no_code": "#c7c7c7",
    "sandbox_error": "#000000",
}
GRADE_COLORS = {
    GradeStatus.RESOLVED: "#98df8a", GradeStatus.UNRESOLVED: "#ffbb78", GradeStatus.TAMPERED: "#ff9896",
    GradeStatus.APPLY_FAILED: "#dbdb8d", GradeStatus.NO_PATCH: "#dddddd", GradeStatus.SANDBOX_ERROR: "#555555",
}
_VAL_ACC = re.compile(r"^val-core/(.+)/acc/mean@\d+$")


def read_metrics(path: str | Path) -> Series:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"metrics file not found: {path} (verl's file logger: VERL_FILE_LOGGER_PATH)")
    series: Series = defaultdict(list)
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            step, data = int(row["step"]), row["data"]
            items = data.items()
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            raise BadRequest(f"{path}:{n}: not a verl file-logger line {{step, data}}") from None
        for key, value in items:
            if isinstance(value, int | float) and not isinstance(value, bool) and value == value:  # drop NaN
                series[key].append((step, float(value)))
    if not series:
        raise BadRequest(f"{path}: no metrics in it")
    return series


def read_rollouts(directory: str | Path) -> Series:
    d = Path(directory)
    if not d.is_dir():
        raise FileNotFoundError(f"rollout dir not found: {directory} (trainer.rollout_data_dir)")
    files = sorted((f for f in d.glob("*.jsonl") if f.stem.isdigit()), key=lambda f: int(f.stem))
    if not files:
        raise BadRequest(f"{directory}: no <step>.jsonl rollout dumps in it")
    series: Series = defaultdict(list)
    per_step: list[tuple[int, Counter[str], int]] = []
    for f in files:
        try:
            rows = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        except json.JSONDecodeError:
            raise BadRequest(f"{f}: not verl rollout JSONL") from None
        if not rows:
            continue
        step = int(f.stem)
        if any("verdict" in r or "grade_status" in r for r in rows):  # verl's own dump lacks them without the extras
            per_step.append((step, Counter(_outcome(r) for r in rows), len(rows)))
        if any("tool_calls" in r for r in rows):
            series["tool_calls/mean"].append((step, mean(float(r.get("tool_calls", 0)) for r in rows)))
        scores: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            scores[str(r.get("input"))].append(float(r.get("score", 0.0)))
        groups = [g for g in scores.values() if len(g) > 1]
        if groups:
            series["zero_variance_groups"].append((step, mean(float(len(set(g)) == 1) for g in groups)))
    names = set().union(*(counts for _, counts, _ in per_step)) if per_step else set()
    for step, counts, total in per_step:  # every outcome at every step: the shares stack
        for key in names:
            series[key].append((step, counts[key] / total))
    return series


def _outcome(row: dict[str, Any]) -> str:
    """The series a sample counts in: ``grade_status/<status>`` for a repository task's episode,
    else ``verdict/<verdict>`` (a judge verdict, or the reward's ``no_code``)."""
    if row.get("grade_status"):
        return f"grade_status/{row['grade_status']}"
    return f"verdict/{row.get('verdict') or 'unknown'}"


def plot_training(metrics: str | Path, out: str | Path, rollouts: str | Path | None = None, *,
                  note: str | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = read_metrics(metrics)
    if rollouts:
        s.update(read_rollouts(rollouts))
    fig, axes = plt.subplots(2, 2, figsize=(14, 8.5), constrained_layout=True)

    ax = axes[0][0]
    _line(ax, s, "critic/score/mean", "mean score (training batch)", "tab:blue")
    held_out = [(key, m.group(1)) for key in sorted(s) if (m := _VAL_ACC.match(key))]
    for (key, source), color in zip(held_out, ("tab:orange", "tab:green", "tab:red", "tab:brown"), strict=False):
        _line(ax, s, key, f"held-out accuracy: {source}", color, style="o--")
    _finish(ax, "Score on training data", "score")

    ax = axes[0][1]
    _line(ax, s, "response_length/mean", "mean response length", "tab:blue")
    _finish(ax, "Response length and truncation", "tokens", loc="upper left")
    if "response_length/clip_ratio" in s:
        twin = ax.twinx()
        _line(twin, s, "response_length/clip_ratio", "clip ratio (hit the length limit)", "tab:red")
        twin.set_ylabel("clip ratio", color="tab:red")
        twin.set_ylim(bottom=0)
        # one legend for both axes, where both curves start low: it covers neither
        handles, labels = (a + b for a, b in zip(ax.get_legend_handles_labels(), twin.get_legend_handles_labels(),
                                                 strict=True))
        ax.legend(handles, labels, fontsize=8, loc="upper left")

    ax = axes[1][0]
    _line(ax, s, "num_turns/mean", "turns per sample (all roles)", "tab:purple")
    _line(ax, s, "tool_calls/mean", "tool calls per sample", "tab:green", style="o-")
    _finish(ax, "Turns and tool calls", "per sample")

    ax = axes[1][1]
    _verdicts(ax, s)

    fig.suptitle("coderl: multi-turn code RL progress" + (f" ({note})" if note else ""))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return str(out)


def _line(ax: Any, series: Series, key: str, label: str, color: str | None, style: str = "-") -> None:
    """Noisy per-step curves are drawn faint with a rolling mean on top; sparse ones as points."""
    if not series.get(key):
        return
    steps, values = zip(*sorted(series[key]), strict=True)
    if len(steps) <= 40:
        ax.plot(steps, values, style, label=label, color=color, markersize=4)
        return
    window = max(3, len(values) // 25)
    smooth = [mean(values[max(0, i - window + 1): i + 1]) for i in range(len(values))]
    (raw,) = ax.plot(steps, values, "-", color=color, alpha=0.25, linewidth=0.8)
    ax.plot(steps, smooth, "-", color=raw.get_color(), label=f"{label} (rolling mean of {window})", linewidth=2)


def _verdicts(ax: Any, s: Series) -> None:
    keys = [k for k in s if k.startswith(("verdict/", "grade_status/")) and any(v > 0 for _, v in s[k])]
    colors = {**{f"verdict/{v}": c for v, c in VERDICT_COLORS.items()},
              **{f"grade_status/{g}": c for g, c in GRADE_COLORS.items()}}
    names = [k for k in dict.fromkeys([*colors, *sorted(keys)]) if k in keys]
    if names:
        steps = [st for st, _ in sorted(s[names[0]])]
        labels = [n.removeprefix("verdict/").replace("grade_status/", "grade: ") for n in names]
        ax.stackplot(steps, *[[v for _, v in sorted(s[n])] for n in names], labels=labels,
                     colors=[colors.get(n, "#17becf") for n in names], alpha=0.85)
        ax.set_ylim(0, 1)
        ax.set_xlim(steps[0], steps[-1])
    _line(ax, s, "zero_variance_groups", "groups where all samples scored the same", "black", style="o--")
    ax.set_title("Verdicts of training samples")
    ax.set_xlabel("step")
    ax.set_ylabel("share of samples")
    if names:
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), facecolor="#dddddd")
    else:
        ax.text(0.5, 0.5, "no data: pass --rollouts (trainer.rollout_data_dir)", ha="center", va="center",
                transform=ax.transAxes)


def _finish(ax: Any, title: str, ylabel: str, loc: str = "best") -> None:
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc=loc)
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
