"""Harbor tasks: the task format SkyRL, rllm, ROCK, OpenSandbox and prime's verifiers read, as coderl runs it.

A Harbor task is a directory::

    instruction.md          what the agent is told
    task.toml               [agent] timeout_sec, user; [verifier] timeout_sec, env, user, workdir_only (ours);
                            [environment] docker_image, workdir, memory_mb, storage_mb, env; [solution] env
    environment/Dockerfile  the task's image (unless [environment] docker_image names one)
    tests/test.sh           the verifier: run in the task's image with tests/ at /tests, it writes the
                            reward to /logs/verifier/reward.txt (a number) or reward.json
    solution/solve.sh       the oracle: run in the agent's place, it must score 1

The ``harbor`` package (0.26) has a task model, but it needs Python 3.12 and pulls litellm, supabase,
fastmcp, fastapi and cryptography: this module reads the documented format with ``tomllib`` instead
(the fields above; others are kept in ``config`` and ignored).

What runs where (docs/agent.md, "Harbor tasks"): the agent's episode runs in an image-backed session
(``SessionHost.open_image``) over the image's work dir; as in Harbor, the verifier runs in the
container the agent left: every path the episode changed (its overlay's upper layer, system paths
included), its processes gone, /tests fresh and read-only, /logs/verifier empty
(``coderl.swe.harbor_grader``). ``[verifier] workdir_only = true`` (or a run's ``--workdir-only``)
grades the work dir's diff alone on the pristine image instead.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from coderl.errors import InvalidTask
from coderl.sandbox.image_build import DockerfileImage

DEFAULT_AGENT_TIMEOUT_S = 600.0
DEFAULT_VERIFIER_TIMEOUT_S = 600.0
TESTS_DIR = "/tests"
SOLUTION_DIR = "/solution"
VERIFIER_DIR = "/logs/verifier"
AGENT_LOG_DIR = "/logs/agent"
HARBOR_REPOSITORY = "localhost/coderl-harbor"


@dataclass(frozen=True)
class HarborTask:
    """One Harbor task directory, read. ``image``: the reference to use, or '' when it is built
    from ``environment/`` (``image_tag``); ``workdir`` '' = the image's own."""

    name: str
    task_dir: Path
    instruction: str
    image: str = ""
    workdir: str = ""
    agent_timeout_s: float = DEFAULT_AGENT_TIMEOUT_S
    agent_user: str | None = None
    verifier_timeout_s: float = DEFAULT_VERIFIER_TIMEOUT_S
    verifier_user: str | None = None
    verifier_env: dict[str, str] = field(default_factory=dict)
    solution_env: dict[str, str] = field(default_factory=dict)
    environment_env: dict[str, str] = field(default_factory=dict)
    memory_mb: int | None = None
    storage_mb: int | None = None
    workdir_only: bool = False  # [verifier] workdir_only: grade only the work dir's diff, on the pristine image

    @property
    def tests_dir(self) -> Path:
        return self.task_dir / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.task_dir / "solution"

    @property
    def environment_dir(self) -> Path:
        return self.task_dir / "environment"

    @property
    def image_tag(self) -> str:
        """The tag the task's image is built under: named by the hash of environment/'s files, so
        a changed Dockerfile is a new image and an unchanged one is built once."""
        return DockerfileImage(self.environment_dir).tag(HARBOR_REPOSITORY, self.name)

    def built_image(self) -> str:
        """The reference to unpack: the one task.toml names, else environment/ built (once per process)."""
        return self.image or DockerfileImage(self.environment_dir).built(self.image_tag)

    @classmethod
    def from_dir(cls, path: str | Path) -> HarborTask:
        task_dir = Path(path).resolve()
        for need in ("instruction.md", "tests/test.sh"):
            if not (task_dir / need).is_file():
                raise InvalidTask(f"{task_dir}: not a Harbor task (no {need})")
        try:
            config = tomllib.loads((task_dir / "task.toml").read_text()) if (task_dir / "task.toml").is_file() else {}
        except tomllib.TOMLDecodeError as exc:
            raise InvalidTask(f"{task_dir}/task.toml: {exc}") from exc
        env = _table(config, "environment")
        image = str(env.get("docker_image") or "")
        if not image and not (task_dir / "environment" / "Dockerfile").is_file():
            raise InvalidTask(f"{task_dir}: neither environment/Dockerfile nor [environment] docker_image")
        agent, verifier, solution = _table(config, "agent"), _table(config, "verifier"), _table(config, "solution")
        meta = _table(config, "task")
        return cls(
            name=str(meta.get("name") or task_dir.name), task_dir=task_dir,
            instruction=(task_dir / "instruction.md").read_text(), image=image, workdir=str(env.get("workdir") or ""),
            agent_timeout_s=_seconds(agent, DEFAULT_AGENT_TIMEOUT_S), agent_user=_user(agent),
            verifier_timeout_s=_seconds(verifier, DEFAULT_VERIFIER_TIMEOUT_S), verifier_user=_user(verifier),
            verifier_env=_env(verifier), solution_env=_env(solution), environment_env=_env(env),
            memory_mb=_int(env, "memory_mb"), storage_mb=_int(env, "storage_mb"),
            workdir_only=_bool(verifier, "workdir_only"),
        )

    def to_row(self) -> dict[str, Any]:
        """What a data row carries: the task directory (on this machine) and the image to use."""
        return {"task_dir": str(self.task_dir), "name": self.name, "image": self.image}

    @classmethod
    def from_row(cls, row: dict[str, Any] | str) -> HarborTask:
        if isinstance(row, str):
            row = json.loads(row)
        if not isinstance(row, dict) or not row.get("task_dir"):
            raise InvalidTask("a Harbor task row needs task_dir")
        task = cls.from_dir(row["task_dir"])
        return replace(task, image=str(row["image"])) if row.get("image") and not task.image else task


def _table(config: dict, name: str) -> dict:
    value = config.get(name) or {}
    if not isinstance(value, dict):
        raise InvalidTask(f"task.toml: [{name}] must be a table")
    return value


def _seconds(table: dict, default: float) -> float:
    value = table.get("timeout_sec", default)
    if not isinstance(value, int | float) or value <= 0:
        raise InvalidTask(f"task.toml: timeout_sec must be a positive number, got {value!r}")
    return float(value)


def _user(table: dict) -> str | None:
    value = table.get("user")
    return None if value is None else str(value)


def _env(table: dict) -> dict[str, str]:
    value = table.get("env") or {}
    if not isinstance(value, dict):
        raise InvalidTask("task.toml: env must be a table of strings")
    return {str(k): str(v) for k, v in value.items()}


def _bool(table: dict, key: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise InvalidTask(f"task.toml: {key} must be true or false, got {value!r}")
    return value


def _int(table: dict, key: str) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or value <= 0:
        raise InvalidTask(f"task.toml: {key} must be a positive integer, got {value!r}")
    return value
