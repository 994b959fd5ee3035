"""Per-sample reward records by training step: the training-health data verl 0.9.1 does not keep.

verl 0.9.1's default (v1) trainer logs the reward extras only for validation; its per-step
``trainer.rollout_data_dir`` dump holds input, output, score and ground truth, not the extras. So
the reward writes them itself, one JSON line per scored sample, in the dump's layout
(``<log_dir>/<step>.jsonl``, the plot reader's ``coderl plot training --rollouts`` input):

- ``step``: the training step whose rollout produced the sample. verl's rollout servers stamp each
  trajectory with the weights version that generated it (``max_global_steps``); the sync trainer
  rolls out step N with version N-1, and validates after step N with version N. Training samples
  go to ``<log_dir>/<step>.jsonl``, other splits (``extra_info.split``, e.g. ``validation``) to
  ``<log_dir>/<split>/<step>.jsonl``; samples scored outside a verl rollout to ``nostep.jsonl``.
- ``input``: the prompt's identity (data source, split, dataset index): the GRPO group key.
- every reward extra (score, verdict, tests, sandbox_error, tool_calls, num_turns, ...).

Each line is one ``write`` on an ``O_APPEND`` descriptor, so the reward workers (separate
processes) can share the files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def log_sample(log_dir: str | Path, data_source: str, extra_info: dict[str, Any], record: dict[str, Any]) -> None:
    split, step, path = step_file(log_dir, extra_info)
    index = extra_info.get("index")
    append_line(path, {"step": step, "split": split, "data_source": str(data_source),
                       "input": f"{data_source}/{split}/{index if index is not None else '?'}", **record})


def step_file(log_dir: str | Path, extra_info: dict[str, Any]) -> tuple[str, int | None, Path]:
    """The sample's split, training step and the per-step file it belongs in (see the module doc)."""
    split = str(extra_info.get("split") or "train")
    step = _step(extra_info.get("max_global_steps"), split)
    folder = Path(log_dir) if split == "train" else Path(log_dir) / split
    return split, step, folder / f"{'nostep' if step is None else step}.jsonl"


def append_line(path: Path, record: dict[str, Any]) -> int:
    """Append ``record`` as one JSON line with ONE ``write`` on an ``O_APPEND`` descriptor, so that
    processes sharing the file never interleave lines. Returns the bytes written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    return len(line)


def _step(version: Any, split: str) -> int | None:
    try:
        weights = int(version)
    except (TypeError, ValueError):
        return None
    return weights + 1 if split == "train" else weights
