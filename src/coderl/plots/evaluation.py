"""evaluation_progress.png: LiveCodeBench pass@1 by checkpoint step (optionally by difficulty), from
the results table `coderl eval record` keeps (CSV: step,pass@1,easy,medium,hard; one row per step)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from coderl.errors import BadRequest


def read_results(path: str | Path) -> list[dict[str, str]]:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"results table not found: {path}")
    with p.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or "step" not in rows[0] or "pass@1" not in rows[0]:
        raise BadRequest(f"{path}: expected a CSV with at least the columns step and pass@1")
    for n, row in enumerate(rows, 2):
        try:
            int(row["step"])
            float(row["pass@1"])
        except (TypeError, ValueError):
            raise BadRequest(f"{path}:{n}: step must be an integer and pass@1 a number") from None
    return rows


def _curve(ax: Any, rows: dict[int, dict[str, str]], column: str, style: str, label: str, **kw: Any) -> None:
    points = sorted((step, float(r[column])) for step, r in rows.items() if (r.get(column) or "").strip())
    if points:
        ax.plot(*zip(*points, strict=True), style, label=label, **kw)


def plot_evaluation(results: str | Path, out: str | Path, *, by_difficulty: bool = True,
                    reference: dict[int, float] | None = None, note: str | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = {int(r["step"]): r for r in read_results(results)}  # a repeated step: the last row counts
    fig, ax = plt.subplots(figsize=(8, 5), constrained_layout=True)
    _curve(ax, rows, "pass@1", "o-", "pass@1 (overall)", linewidth=2.2)
    if by_difficulty:
        for level in ("easy", "medium", "hard"):
            _curve(ax, rows, level, ".--", level)
    if reference:
        ref_steps = sorted(reference)
        ax.plot(ref_steps, [reference[s] for s in ref_steps], "x:", color="gray",
                label="recipe, as reported (Qwen3-1.7B)")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("RL step")
    ax.set_ylabel("LiveCodeBench pass@1 (%)")
    ax.set_title("LiveCodeBench by checkpoint" + (f" ({note})" if note else ""))
    ax.grid(alpha=0.3)
    ax.legend()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return str(out)


RECIPE_REPORTED = {0: 12.35, 20: 13.47, 40: 16.07, 60: 17.28, 80: 18.75, 100: 18.79, 120: 20.74, 140: 23.83, 160: 25.41}
