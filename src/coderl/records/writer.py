"""Where a run's per-sample records go, how big one may be, and which samples are kept.

Layout: ``<record_dir>/<step>.jsonl`` for training samples, ``<record_dir>/<split>/<step>.jsonl``
for other splits, ``nostep.jsonl`` where the trainer's step is unknown (the layout of the reward's
``reward_samples``, `coderl.records.samples_log`, whose one-write ``O_APPEND`` line writer this
uses: the reward workers, the tool's agent-loop workers and the agent loop are separate processes
sharing the files). One JSON line per sample, written once the sample is scored, so nothing waits
on it but that one ``write``.

Size cap (documented per sample, so a run's disk use is bounded): every text longer than
``max_text`` characters (``CODERL_RECORD_MAX_TEXT``, default 4000) keeps its head and tail around
a marker ``... [N characters cut] ...``; a token record longer than ``max_tokens``
(``CODERL_RECORD_MAX_TOKENS``, default 16384) keeps its first ``max_tokens`` tokens. The record's
``truncated`` list names every field cut, so the viewer can say so. With the defaults a code RL
sample is 2-10 KB and an agent sample about 12 bytes per token plus its texts.

Sampling (big runs): ``CODERL_RECORD_EVERY=k`` (or the reward's ``record_every``) keeps the
samples of every k-th GRPO group (dataset index divisible by k), so a group is kept whole.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coderl.records.samples_log import append_line, step_file

CUT_MARK = "... [{n} characters cut] ..."


@dataclass(frozen=True)
class RecordSettings:
    directory: str = ""  # empty: records are off
    every: int = 1
    max_text: int = 4000
    max_tokens: int = 16384

    @classmethod
    def from_env(cls, directory: str | None = None, every: int | None = None) -> RecordSettings:
        """Explicit values win; ``None`` falls back to ``CODERL_RECORD_DIR`` / ``CODERL_RECORD_EVERY``
        (set for every Ray worker through the run's runtime env); an empty directory turns records off."""
        env = os.environ
        return cls(directory=env.get("CODERL_RECORD_DIR", "") if directory is None else directory,
                   every=max(1, int(every if every is not None else env.get("CODERL_RECORD_EVERY", "1") or 1)),
                   max_text=max(100, int(env.get("CODERL_RECORD_MAX_TEXT", "4000") or 4000)),
                   max_tokens=max(1, int(env.get("CODERL_RECORD_MAX_TOKENS", "16384") or 16384)))

    def keeps(self, extra_info: dict[str, Any]) -> bool:
        """Records on, and this sample's group is one of every ``every``-th."""
        if not self.directory:
            return False
        if self.every == 1:
            return True
        try:
            return int(extra_info.get("index")) % self.every == 0  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return True  # no group index: keep (cannot sample groups whole without one)


def group_key(data_source: str, extra_info: dict[str, Any]) -> str:
    """The GRPO group: the prompt's identity, as the reward's sample log writes it (``input``)."""
    split = str(extra_info.get("split") or "train")
    index = extra_info.get("index")
    return f"{data_source}/{split}/{index if index is not None else '?'}"


def write_record(settings: RecordSettings, extra_info: dict[str, Any], record: dict[str, Any],
                 step: int | None = None) -> int:
    """Cap and append one sample's record; returns the bytes written (0: not kept, or the disk
    refused: a full disk must never fail a training step, so that is a warning). ``step``: the
    trainer's step when the caller knows it, else it comes from ``extra_info`` (the weights version)."""
    if not settings.keeps(extra_info):
        return 0
    split, known, path = step_file(settings.directory, extra_info)
    if step is None:
        step = known
    else:
        path = path.with_name(f"{step}.jsonl")
    truncated: list[str] = list(record.get("truncated") or [])
    capped = _cap(record, settings.max_text, "", truncated)
    capped.update(step=step, split=split, truncated=truncated)
    try:
        return append_line(path, capped)
    except OSError as exc:
        warnings.warn(f"coderl records: cannot write to {path}: {exc}", stacklevel=2)
        return 0


def record_safely(settings: RecordSettings, extra_info: dict[str, Any], build: Callable[[], dict[str, Any]],
                  step: int | None = None) -> int:
    """Build and write one record if this sample is kept. A record is a by-product: whatever goes
    wrong building it (an odd value in a batch) is a warning, never a failed training step."""
    if not settings.keeps(extra_info):
        return 0
    try:
        return write_record(settings, extra_info, build(), step)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        warnings.warn(f"coderl records: sample not recorded: {type(exc).__name__}: {exc}", stacklevel=2)
        return 0


def cap_text(text: str, limit: int) -> str:
    """Head and tail of ``text`` around a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    mark = CUT_MARK.format(n=len(text) - limit)
    half = limit // 2
    return f"{text[:half]}\n{mark}\n{text[-half:]}"


def _cap(value: Any, limit: int, where: str, truncated: list[str]) -> Any:
    if isinstance(value, str):
        if len(value) > limit:
            truncated.append(where or "text")
            return cap_text(value, limit)
        return value
    if isinstance(value, dict):
        return {k: _cap(v, limit, f"{where}.{k}" if where else str(k), truncated) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cap(v, limit, f"{where}[{i}]", truncated) for i, v in enumerate(value)]
    return value
