"""evaluation_progress.png: LiveCodeBench pass@1 by checkpoint step (optionally by difficulty), from
the results table `scripts/eval_livecodebench.sh` appends to (CSV: step,pass@1,easy,medium,hard,...)."""

from __future__ import annotations

import csv
from pathlib import Path

from coderl.errors import BadRequest


def read_results(path: str | Path) -> list[dict[str, str]]:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"results table not found: {path}")
    with p.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or "step" not in rows[0] or "pass@1" not in rows[0]:
        raise BadRequest(f"{path}: expected a CSV with at least the columns step and pass@1")
    return rows


def plot_evaluation(results: str | Path, out: str | Path, *, by_difficulty: bool = True,
                    reference: dict[int, float] | None = None, note: str | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(read_results(results), key=lambda r: int(r["step"]))
    steps = [int(r["step"]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 5), constrained_layout=True)
    ax.plot(steps, [float(r["pass@1"]) for r in rows], "o-", label="pass@1 (overall)", linewidth=2)
    if by_difficulty:
        for level in ("easy", "medium", "hard"):
            if level in rows[0] and all(r.get(level) not in (None, "") for r in rows):
                ax.plot(steps, [float(r[level]) for r in rows], ".--", label=level)
    if reference:
        ref_steps = sorted(reference)
        ax.plot(ref_steps, [reference[s] for s in ref_steps], "x:", color="gray", label="recipe (reported)")
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
