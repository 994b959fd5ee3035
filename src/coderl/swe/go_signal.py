"""The host's half of the grading launcher's go-ahead (``pytest_inside/launcher.wait_for_go``).

The grader starts its launcher before it applies the agent's diff, so that the interpreter's start,
pytest's import and the runner's own modules overlap the applies instead of following them; the
launcher then waits, reading nothing of the work tree, until the host has applied the diff,
restored the protected files, applied the test patch and checked the work tree's byte code. The
go-ahead is one JSON line on a FIFO in a directory of its own that the host binds read-only into
that grading sandbox alone: the diff's applies run in other sandboxes that never see it, and
nothing of the repository runs in the grading sandbox before the line is read, so nothing but the
host can give it. The host holds the FIFO open for reading and writing from the start, so the
launcher's open never waits and a line written before the launcher reads it is kept.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path


class GoSignal:
    """One grading run's go-ahead: ``dir`` to bind read-only, ``path`` for the launcher's spec."""

    def __init__(self, parent: Path) -> None:
        parent.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix="go-", dir=parent))
        self.dir.chmod(0o755)
        self.path = self.dir / "go"
        os.mkfifo(self.path, 0o644)
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_NONBLOCK)

    def send(self, message: dict) -> None:
        """The go-ahead (a line far below the pipe's buffer, so the write is whole and never waits)."""
        assert self._fd is not None
        os.write(self._fd, json.dumps(message).encode() + b"\n")

    def close(self) -> None:
        """Idempotent. A launcher still waiting reads the FIFO's end and stops, having run nothing."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        shutil.rmtree(self.dir, ignore_errors=True)
