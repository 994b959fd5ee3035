"""Start bubblewrap once with the boundary's namespaces, a fresh /proc and /dev, and run `true`:
the only reliable way to know the boundary can be built here. Container engines' defaults forbid
exactly the calls bubblewrap needs, and that is the usual reason it cannot; the answer then names
the options that allow them (docs/deploy.md), in one line."""

from __future__ import annotations

import os
import shutil
import subprocess

from coderl.sandbox import isolation

CONTAINER_OPTIONS = ("--security-opt seccomp=unconfined --security-opt systempaths=unconfined "
                     "(and apparmor=unconfined where AppArmor is on)")
# bubblewrap's own messages -> which container confinement causes them.
_CAUSES = (
    ("Can't mount proc", "the engine masks /proc paths (systempaths)"),
    ("Can't set hostname", "the engine's seccomp profile"),
    ("Creating new namespace failed", "the engine's seccomp profile or AppArmor"),
    ("setting up uid map", "the engine's seccomp profile or AppArmor"),
)


def in_container() -> bool:
    """Docker and podman leave these marks in every container they start."""
    return (os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")
            or os.environ.get("container", "") in ("docker", "podman", "oci"))  # noqa: SIM112 (its real name)


def boundary_problem() -> str | None:
    """None when bubblewrap builds the boundary; else why not, in one line."""
    true = shutil.which("true") or "/bin/true"
    argv = [*isolation.boundary_args(()), "--proc", "/proc", "--dev", "/dev", "--", true]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not be started: {exc}"
    if done.returncode == 0:
        return None
    said = next((line.strip() for line in done.stderr.splitlines() if line.strip()), f"exit {done.returncode}")
    if not in_container():
        return f"bubblewrap cannot build the sandbox here ({said})"
    cause = next((why for marker, why in _CAUSES if marker in said), "the container's confinement")
    return (f"bubblewrap cannot build the sandbox in this container ({said}; blocked by {cause}): "
            f"start the container with {CONTAINER_OPTIONS}, see docs/deploy.md")
