"""What a killed process left behind is found by its name: layer directories, cgroups and socket
directories carry the pid of the process that made them (``[prefix]<pid>-...``), and the next one to
start removes those whose process no longer runs (a SIGKILL leaves no chance to clean up)."""

from __future__ import annotations

from pathlib import Path


def left_by_dead_process(name: str, prefix: str = "") -> bool:
    """Whether ``name`` (``<prefix><pid>-...``) was made by a process that is gone."""
    pid = name.removeprefix(prefix).split("-")[0]
    return pid.isdigit() and not Path(f"/proc/{pid}").exists()
