"""What a run directory holds for the viewer, read leniently: whatever can be read is shown, and
everything that cannot (a missing folder, a truncated or non-JSON line, a file that is not a step
file) is listed with the reason, so a half-written or foreign directory still gives a page.

Where records are looked for: ``RUN/records`` and ``RUN/*/records`` (the smoke run keeps its
training under ``RUN/rl``), written by `coderl.records`. A run from before records existed has only
the reward's ``reward_samples`` (same layout, fewer fields): those are read instead. A code record
without its prompt (verl's v1 trainer does not hand the reward one) gets it from verl's rollout dump
beside it (``rollouts/<step>.jsonl``, ``trainer.rollout_data_dir`` in our scripts): the line whose
``output`` hashes to the record's ``response_sha1`` at the same step, if exactly one prompt does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coderl.judge.verdict import Verdict
from coderl.records.code import response_sha1
from coderl.swe.grade_status import GradeStatus

STEP_FILE = re.compile(r"^(\d+|nostep)\.jsonl$")


@dataclass
class RunRecords:
    run_dir: Path
    samples: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)  # {path, line?, reason}
    sources: list[str] = field(default_factory=list)  # the record folders read

    def skip(self, path: Path, reason: str, line: int | None = None) -> None:
        entry: dict[str, Any] = {"path": self._rel(path), "reason": reason}
        if line is not None:
            entry["line"] = line
        self.skipped.append(entry)

    def _rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.run_dir))
        except ValueError:
            return str(path)


def run_directory(given: str, command: str) -> Path:
    """A run directory named on ``command``'s command line, or a one-line error saying what it is not."""
    run_dir = Path(given)
    if not run_dir.exists():
        raise FileNotFoundError(f"run directory not found: {run_dir}")
    if not run_dir.is_dir():
        raise ValueError(f"not a directory: {run_dir} ({command} takes a run's output directory)")
    return run_dir


def read_run(run_dir: Path) -> RunRecords:
    """Every readable sample under ``run_dir`` (which must be a directory: the caller checks)."""
    run = RunRecords(run_dir)
    folders = _folders(run_dir, "records")
    if not folders:
        folders = _folders(run_dir, "reward_samples")
        if folders:
            run.skip(run_dir, "no records/ folder: showing the reward's reward_samples/ (no turns, tool runs or tokens)")
        else:
            run.skip(run_dir, "no records/ (or reward_samples/) folder here or one level down: nothing to show")
    for folder in folders:
        run.sources.append(run._rel(folder))
        first = len(run.samples)
        _read_folder(run, folder, "train")
        _prompts_from_rollouts(run, folder.parent / "rollouts", run.samples[first:])
    return run


def _prompts_from_rollouts(run: RunRecords, rollouts: Path, samples: list[dict[str, Any]]) -> None:
    wanted = [s for s in samples if not s.get("prompt") and s.get("response_sha1") and s["split"] == "train"]
    if not wanted or not rollouts.is_dir():
        return
    inputs: dict[tuple[int | None, str], set[str]] = {}
    for path in sorted(rollouts.glob("*.jsonl"), key=_file_order):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            run.skip(path, f"unreadable: {exc.strerror or exc}")
            continue
        for number, line in enumerate(text.splitlines(), 1):
            try:
                row = json.loads(line)
                key = (row.get("step"), response_sha1(str(row["output"])))
                inputs.setdefault(key, set()).add(str(row["input"]))
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
                run.skip(path, "not a rollout dump line (input, output, step)", number)
    for sample in wanted:
        found = inputs.get((sample["step"], sample["response_sha1"]), set())
        if len(found) == 1:
            sample["prompt"] = [{"role": "prompt", "content": next(iter(found)), "source": "verl's rollout dump"}]


def _folders(run_dir: Path, name: str) -> list[Path]:
    found = [run_dir / name] if (run_dir / name).is_dir() else []
    found += sorted(p for p in run_dir.glob(f"*/{name}") if p.is_dir())
    return found


def _read_folder(run: RunRecords, folder: Path, split: str) -> None:
    for path in sorted(folder.iterdir(), key=_file_order):
        if path.is_dir():
            if split == "train":
                _read_folder(run, path, path.name)  # <split>/<step>.jsonl
            else:
                run.skip(path, "a folder inside a split folder")
        elif not STEP_FILE.match(path.name):
            run.skip(path, "not a step file (<step>.jsonl or nostep.jsonl)")
        else:
            _read_file(run, path, split)


def _file_order(path: Path) -> tuple[int, int, str]:
    """Step files by step number (2 before 10), then nostep, then anything else by name."""
    match = STEP_FILE.match(path.name)
    if match and match.group(1) != "nostep":
        return (0, int(match.group(1)), "")
    return (1 if match else 2, 0, path.name)


def _read_file(run: RunRecords, path: Path, split: str) -> None:
    try:
        data = path.read_bytes()
    except OSError as exc:
        run.skip(path, f"unreadable: {exc.strerror or exc}")
        return
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    last = len(lines) - 1  # the piece after the final newline: '' in a complete file
    file_step = None if path.stem == "nostep" else int(path.stem)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            why = "truncated last line (no newline)" if number - 1 == last else f"not JSON ({exc.msg})"
            run.skip(path, why, number)
            continue
        if not isinstance(record, dict):
            run.skip(path, f"not a record (a JSON {type(record).__name__})", number)
            continue
        run.samples.append(normalise(record, file_step, split))


def normalise(record: dict[str, Any], file_step: int | None, split: str) -> dict[str, Any]:
    """One sample with the fields the table and the overview use, whatever wrote it (a record,
    or an older reward_samples line: ``score`` for ``reward``, ``input`` for ``group``)."""
    out = dict(record)
    step = record.get("step", file_step)
    out["step"] = step if isinstance(step, int) else file_step
    out["split"] = str(record.get("split") or split)
    out["kind"] = str(record.get("kind") or "code")
    out["group"] = str(record.get("group") or record.get("input") or "?")
    reward = record.get("reward", record.get("score"))
    out["reward"] = float(reward) if isinstance(reward, int | float) and not isinstance(reward, bool) else None
    # a judge verdict and a repository grade status are two fields: an agent record from before they
    # were (its grader block's status copied into ``verdict``) gets its status moved
    grade = record.get("grade_status") or (record.get("grader") or {}).get("status")
    verdict = record.get("verdict")
    out["verdict"] = str(verdict if verdict and ("grade_status" in record or verdict != grade) else "none")
    out["grade_status"] = str(grade or "none")
    out["sandbox_error"] = 1 if record.get("sandbox_error") else 0
    hack = record.get("hack") if isinstance(record.get("hack"), dict) else {}
    out["hack"] = {"tampered": 1 if hack.get("tampered") else 0, "tests_touched": 1 if hack.get("tests_touched") else 0,
                   "ended_early": 1 if hack.get("ended_early") else 0,
                   "findings": {str(k): v for k, v in (hack.get("findings") or {}).items() if isinstance(v, int)}}
    calls = record.get("tool_calls")
    out["tool_calls"] = calls if isinstance(calls, int) else 0
    return out


def overview(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (split, step): samples, mean reward, accepted/resolved rate (a judge verdict ``accepted``
    or a grade status ``resolved``), verdict mix, grade status mix, zero-variance GRPO groups (2+
    samples, one reward: no gradient), sandbox errors and the reward-hack signals (samples graded
    tampered, that touched test files, that ended the tests early; findings per class)."""
    by_step: dict[tuple[str, int | None], list[dict[str, Any]]] = {}
    for s in samples:
        by_step.setdefault((s["split"], s["step"]), []).append(s)
    rows = []
    for (split, step), group in sorted(by_step.items(), key=lambda kv: (kv[0][0] != "train", kv[0][0],
                                                                          kv[0][1] is None, kv[0][1] or 0)):
        rewards = [s["reward"] for s in group if s["reward"] is not None]
        verdicts: dict[str, int] = {}
        grades: dict[str, int] = {}
        groups: dict[str, set[float | None]] = {}
        sizes: dict[str, int] = {}
        for s in group:
            verdicts[s["verdict"]] = verdicts.get(s["verdict"], 0) + 1
            if s["grade_status"] != "none":
                grades[s["grade_status"]] = grades.get(s["grade_status"], 0) + 1
            groups.setdefault(s["group"], set()).add(s["reward"])
            sizes[s["group"]] = sizes.get(s["group"], 0) + 1
        rows.append({"split": split, "step": step, "samples": len(group),
                     "reward": sum(rewards) / len(rewards) if rewards else None,
                     "accepted": sum(s["verdict"] == Verdict.ACCEPTED or s["grade_status"] == GradeStatus.RESOLVED
                                     for s in group) / len(group),
                     "verdicts": verdicts, "grade_statuses": grades, "groups": len(groups),
                     "zero_variance_groups": sum(1 for g, r in groups.items() if sizes[g] > 1 and len(r) == 1),
                     "sandbox_errors": sum(s["sandbox_error"] for s in group), "hack": _hack_totals(group)})
    return rows


def _hack_totals(group: list[dict[str, Any]]) -> dict[str, Any]:
    findings: dict[str, int] = {}
    for s in group:
        for name, n in s["hack"]["findings"].items():
            findings[name] = findings.get(name, 0) + n
    return {**{k: sum(s["hack"][k] for s in group) for k in ("tampered", "tests_touched", "ended_early")},
            "findings": findings}
