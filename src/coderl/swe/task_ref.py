"""The task reference: which task an episode is on and where its environment comes from, for every
task kind, read from and written back to each place it travels.

Kinds (``TaskRef.kind``):

- ``snapshot``: a repository task (`RepoTask`) over the snapshot of (repo, base commit) that this
  machine's store makes from its mirrors, with the task's environment (``coderl data swe`` rows);
- ``image``: a repository task whose environment is an image (SWE-bench's, SWE-Gym's, ...; or a
  Dockerfile / build context, built once by content): ``ImageRef`` (reference, the interpreter with
  the task's pytest, work dir, user; '' = the default: ``python3``, the image's WorkingDir, its User);
- ``harbor``: a Harbor task directory (`HarborTask`), its image named or built from environment/;
- ``empty``: no task at all: an empty work tree (a code problem), nothing to grade against.

Where a reference is read and written (one pair each, all here):

- a verl row's ``extra_info`` (``from_extra_info`` / ``to_extra_info``: what ``coderl data swe`` and
  ``coderl data harbor`` write; the agent loop reads it). The task travels as JSON text, so parquet
  never infers a schema for its lists. Local paths (the snapshot, environment, repositories and
  cache directories) are this machine's;
- a request body of the session service (``from_request`` / ``to_request``: ``task``, ``image``,
  ``harbor`` as ``POST /v1/sessions`` and a ``/v1/swe/grade`` item take them). A request never
  names a host path: a Harbor task is named by its directory's name under the node's
  ``CODERL_HARBOR_TASKS``, an image built from a Dockerfile by its content tag;
- a data set row (``of_repo_task`` / ``of_harbor``: a tasks.jsonl row read by the caller).

An unreadable reference raises `InvalidTask`: the data's fault, graded ``sandbox_error`` (never the
agent's). How each kind runs and is graded is `coderl.swe.episodes`'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coderl.errors import InvalidTask
from coderl.swe.harbor import HarborTask
from coderl.swe.task import RepoTask

SNAPSHOT, IMAGE, HARBOR, EMPTY = "snapshot", "image", "harbor", "empty"
AGENT_NAME = "coderl_gateway_agent"  # the verl agent loop (`coderl.verl.agent_loop`) a row of every kind names
KINDS = (SNAPSHOT, IMAGE, HARBOR, EMPTY)


@dataclass(frozen=True)
class ImageRef:
    """The image a repository task lives in. ``reference``: a reference, an image id, or (a row's) a
    Dockerfile / build context path; '' fields are the defaults."""

    reference: str
    python: str = ""
    workdir: str = ""
    user: str = ""


@dataclass(frozen=True)
class TaskRef:
    kind: str
    instance_id: str = ""
    task: RepoTask | None = None  # snapshot, image
    image: ImageRef | None = None  # image
    harbor: dict[str, Any] | None = None  # harbor: the row (task_dir, name, image); read by ``harbor_task()``
    # this machine's directories (rows written here; a request names none)
    repo_dir: str = ""  # snapshot: the snapshot the episode opens on ('' = made from repos_dir's mirrors)
    env_dir: str = ""
    repos_dir: str = ""
    cache_dir: str = ""

    # ------------------------------------------------------------------ constructors
    @classmethod
    def of_repo_task(cls, task: RepoTask, *, image: ImageRef | None = None, repo_dir: Path | str = "",
                     env_dir: Path | str | None = "", repos_dir: Path | str = "", cache_dir: Path | str = "") -> TaskRef:
        if image is not None:
            return cls(IMAGE, task.instance_id, task=task, image=image, cache_dir=str(cache_dir or ""))
        return cls(SNAPSHOT, task.instance_id, task=task, repo_dir=str(repo_dir or ""), env_dir=str(env_dir or ""),
                   repos_dir=str(repos_dir or ""), cache_dir=str(cache_dir or ""))

    @classmethod
    def of_harbor(cls, task: HarborTask, *, image: str | None = None, cache_dir: Path | str = "") -> TaskRef:
        """``image``: the reference the row names (None: the task directory's)."""
        row = {**task.to_row(), "image": task.image if image is None else image}
        if task.workdir_only:  # a run's choice (``coderl eval harbor --workdir-only``) the directory may not say
            row["workdir_only"] = True
        return cls(HARBOR, task.name, harbor=row, cache_dir=str(cache_dir or ""))

    def harbor_task(self) -> HarborTask:
        """The Harbor task, read from its directory on this machine."""
        assert self.harbor is not None
        task = HarborTask.from_row(self.harbor)
        return replace(task, workdir_only=True) if self.harbor.get("workdir_only") else task

    # ------------------------------------------------------------------ verl rows
    @classmethod
    def from_extra_info(cls, info: dict[str, Any] | None) -> TaskRef:
        """The reference a verl row's ``extra_info`` carries (``empty`` without a task)."""
        info = dict(info or {})
        instance_id, cache = str(info.get("instance_id") or ""), str(info.get("cache_dir") or "")
        try:
            if info.get("harbor_task"):
                row = info["harbor_task"]
                row = json.loads(row) if isinstance(row, str) else dict(row)
                if not row.get("task_dir"):
                    raise InvalidTask("a Harbor task row needs task_dir")
                return cls(HARBOR, instance_id or str(row.get("name") or Path(row["task_dir"]).name), harbor=row,
                           cache_dir=cache)
            if info.get("image") or info.get("task"):
                task = RepoTask.from_row(json.loads(info["task"]))
                if info.get("image"):
                    image = ImageRef(str(info["image"]), str(info.get("image_python") or ""),
                                     str(info.get("workdir") or ""), str(info.get("image_user") or ""))
                    return cls(IMAGE, task.instance_id, task=task, image=image, cache_dir=cache)
                return cls(SNAPSHOT, task.instance_id, task=task, repo_dir=str(info.get("repo_dir") or ""),
                           env_dir=str(info.get("env_dir") or ""), repos_dir=str(info.get("repos_dir") or ""),
                           cache_dir=cache)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidTask(f"the row carries no readable task: {exc}") from None
        except InvalidTask as exc:
            raise InvalidTask(f"the row carries no readable task: {exc}") from None
        return cls(EMPTY, instance_id, repo_dir=str(info.get("repo_dir") or ""), cache_dir=cache)

    def to_extra_info(self) -> dict[str, Any]:
        """The ``extra_info`` of a verl row on this reference (what ``from_extra_info`` reads back)."""
        if self.kind == HARBOR:
            assert self.harbor is not None
            return {"instance_id": self.instance_id, "harbor_task": json.dumps(self.harbor), "cache_dir": self.cache_dir}
        assert self.task is not None, f"a {self.kind} reference has no task row"
        task = json.dumps(self.task.to_row())
        if self.kind == IMAGE:
            assert self.image is not None
            return {"instance_id": self.instance_id, "task": task, "image": self.image.reference,
                    "image_python": self.image.python, "workdir": self.image.workdir, "image_user": self.image.user,
                    "cache_dir": self.cache_dir}
        return {"instance_id": self.instance_id, "repo_dir": self.repo_dir, "env_dir": self.env_dir,
                "repos_dir": self.repos_dir, "cache_dir": self.cache_dir, "task": task}

    # ------------------------------------------------------------------ request bodies
    def to_request(self) -> dict[str, Any]:
        """What a session service is sent (``task``, ``image`` or ``harbor``; nothing for ``empty``).
        An image built from a Dockerfile is named by its tag (the node builds it ahead: `coderl
        images pull`); a Harbor task by its directory's name (the node reads its own copy)."""
        if self.kind == EMPTY:
            return {}
        if self.kind == HARBOR:
            assert self.harbor is not None
            return {"harbor": {"task": Path(self.harbor["task_dir"]).name, "image": self.harbor.get("image") or None}}
        assert self.task is not None
        if self.kind == IMAGE:
            from coderl.sandbox.image_build import reference_of

            assert self.image is not None
            return {"task": self.task.to_row(),
                    "image": {"reference": reference_of(self.image.reference), "python": self.image.python or None,
                              "workdir": self.image.workdir or None, "user": self.image.user or None}}
        return {"task": self.task.to_row()}

    @classmethod
    def from_request(cls, task: dict[str, Any] | None, image: dict[str, Any] | None, harbor: dict[str, Any] | None,
                     *, harbor_dir: Path | None) -> TaskRef:
        """A request body's reference, read on this node: the row checked for what a request may ask
        (`coderl.swe.request_rows`), a Harbor task looked up in ``harbor_dir`` (the node's
        ``CODERL_HARBOR_TASKS``). Raises `InvalidTask` (or `UntrustedInput`) for a request that names
        one wrongly: a 400, or the grade item's error."""
        from coderl.swe.request_rows import task_from_request

        if harbor is not None:
            if task is not None or image is not None:
                raise InvalidTask("a Harbor task is named by 'harbor' alone (no 'task', no 'image')")
            if harbor_dir is None:
                raise InvalidTask("this service serves no Harbor tasks: start it with CODERL_HARBOR_TASKS set to a "
                                  "directory of Harbor task directories")
            task_dir = harbor_dir / str(harbor["task"])
            if not task_dir.is_dir():
                raise InvalidTask(f"no Harbor task {harbor['task']!r} in this node's CODERL_HARBOR_TASKS")
            row = {"task_dir": str(task_dir), "name": task_dir.name, "image": harbor.get("image") or ""}
            return cls(HARBOR, task_dir.name, harbor=row)
        if image is not None and task is None:
            raise InvalidTask("'image' names the environment of a repository task: send its row as 'task'")
        if task is None:
            return cls(EMPTY)
        repo = task_from_request(task)
        if image is None:
            return cls(SNAPSHOT, repo.instance_id, task=repo)
        return cls(IMAGE, repo.instance_id, task=repo,
                   image=ImageRef(str(image["reference"]), image.get("python") or "", image.get("workdir") or "",
                                  image.get("user") or ""))
