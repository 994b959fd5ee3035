"""Run by the harbor venv's Python 3.12 (tests/helpers/harbor_venv.py), never by coderl's: each ATIF
file named (or found under a folder named) on the command line, read by harbor's own code: its
pydantic `Trajectory` model, its `TrajectoryValidator`, its per-model usage reader and its trace
export's conversation builder (the SFT rows `harbor traces export` makes). One JSON line per file."""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

from harbor.models.trajectories import Trajectory
from harbor.utils.traces_utils import extract_conversations_from_trajectory
from harbor.utils.trajectory_utils import load_model_usage_from_trajectory
from harbor.utils.trajectory_validator import TrajectoryValidator


def main(args: list[str]) -> None:
    files = sorted(p for a in args for p in (Path(a).rglob("*.json") if Path(a).is_dir() else [Path(a)]))
    for path in files:
        trajectory = Trajectory.model_validate_json(path.read_text())
        validator = TrajectoryValidator()
        valid = validator.validate(path)
        usage = load_model_usage_from_trajectory(path) or {}
        conversations = extract_conversations_from_trajectory(path, {
            "agent_name": None, "model_name": None, "model_provider": "coderl", "start_time": None, "run_id": path.stem})
        steps = trajectory.steps
        print(json.dumps({
            "file": str(path), "harbor": version("harbor"), "schema_version": trajectory.schema_version,
            "valid": valid, "errors": validator.errors, "agent": trajectory.agent.name,
            "model_name": trajectory.agent.model_name, "sources": [s.source for s in steps],
            "tool_calls": [c.function_name for s in steps for c in s.tool_calls or []],
            "observations": [r.source_call_id for s in steps if s.observation for r in s.observation.results],
            "completion_token_ids": [len(s.metrics.completion_token_ids or []) for s in steps if s.metrics],
            "usage": {name: u.model_dump() for name, u in usage.items()},
            "conversations": [len(c["conversations"]) for c in conversations],
            "reward": (trajectory.extra or {}).get("reward")}))


if __name__ == "__main__":
    main(sys.argv[1:])
