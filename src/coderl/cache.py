"""Where coderl keeps what it builds once and reuses across runs: repository snapshots, unpacked
mirrors, task environments, the Qwen tokenizer and the tiny stand-in model. One default for all of
them, so a user who sets (or clears) one directory gets every cached build, and the docs name one
place."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$CODERL_CACHE`` when set and not empty, else ``~/.cache/coderl`` (kept across reboots, unlike
    a temporary directory: snapshots and environments take minutes to build)."""
    return Path(os.environ.get("CODERL_CACHE") or Path.home() / ".cache" / "coderl")
