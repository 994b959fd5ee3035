"""Running a CPU smoke pipeline (scripts/smoke_pipeline.sh, scripts/smoke_agent_pipeline.sh,
scripts/smoke_agent_remote_step.sh) from a test: the script on a fresh run directory, its output
shown when it fails, its report read back."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_pipeline(script: str, out: Path, env: dict[str, str], args: tuple[str, ...] = (), timeout_s: int = 5400) -> Path:
    """``scripts/<script> [ARGS...] OUT``; fails the test with the script's last output unless it exits 0."""
    proc = subprocess.run(["bash", str(ROOT / "scripts" / script), *args, str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout_s, env={**os.environ, **env})
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    print(proc.stdout)
    return out


def read_report(run: Path) -> dict[str, Any]:
    return json.loads((run / "report.json").read_text())
