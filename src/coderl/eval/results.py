"""The results table across checkpoints (CSV: step,pass@1,easy,medium,hard), which
`scripts/eval_livecodebench.sh` fills and `coderl plot eval` draws. One row per step: a step
evaluated again (resumed, or rescored) replaces its row instead of adding a second one."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from coderl.errors import BadRequest

COLUMNS = ("step", "pass@1", "easy", "medium", "hard")


def record(summary_path: str | Path, step: int, results_path: str | Path) -> str:
    """Put one checkpoint's pass@1 (overall and by difficulty) into the table; returns the row."""
    try:
        summary = json.loads(Path(summary_path).read_text())
        overall = summary["overall"]["pass@1"]
        by_difficulty = summary.get("by_difficulty", {})
    except FileNotFoundError:
        raise FileNotFoundError(f"summary not found: {summary_path}") from None
    except (json.JSONDecodeError, KeyError, TypeError):
        raise BadRequest(f"{summary_path}: not a `coderl eval lcb` summary.json") from None
    if overall is None:
        raise BadRequest(f"{summary_path}: no problem was scored (see its sandbox errors); nothing to record")

    def cell(value: float | None) -> str:
        return "" if value is None else f"{value:.2f}"

    row = {"step": str(step), "pass@1": cell(overall),
           **{d: cell((by_difficulty.get(d) or {}).get("pass@1")) for d in COLUMNS[2:]}}
    path = Path(results_path)
    rows = []
    if path.exists():
        with path.open(newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if r.get("step") != row["step"]]
    rows.append(row)
    rows.sort(key=lambda r: int(r["step"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return ",".join(row[c] for c in COLUMNS)
