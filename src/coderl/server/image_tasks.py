"""Image-backed tasks on a service node: the image rows of remote sessions (`server.sessions`) and of
`/v1/swe/grade` (`server.swe`), each image unpacked from THIS node's cache, never pulled or built
while a request waits.

What a request names (the same fields on ``POST /v1/sessions`` and in a ``/v1/swe/grade`` item):

- a repository task whose environment is an image (SWE-bench's, SWE-Gym's, SWE-smith's, R2E-Gym's):
  ``task`` (the row, as for a snapshot task) and ``image``: ``{"reference", "python"?, "workdir"?,
  "user"?}``. ``reference`` is a reference or an image id the node's engine holds (a digest reference,
  ``name@sha256:...``, pins the exact image; a row whose image is a Dockerfile is named by the tag
  of its content, ``localhost/coderl-build/...``, `coderl.sandbox.image_build`); ``python`` the
  interpreter with the task's pytest (default ``python3``), ``workdir`` the repository (default: the
  image's WorkingDir), ``user`` who the episode and its grading run as (default: the image's User;
  one the image's /etc/passwd lacks is refused). The row's ``image``, ``image_python``, ``workdir``
  and ``image_user`` fields, as `coderl.swe.image_episodes` reads them.
- a Harbor task: ``harbor``: ``{"task": NAME, "image"?}``. NAME is a directory of
  ``CODERL_HARBOR_TASKS`` on the node: instruction, task.toml and the verifier (tests/) are the
  node's copy, so a request never names a host path and never ships the tests it is graded by.
  The image is the one task.toml names, else ``image``, else the tag built from the node's copy of
  environment/ (the same files make the same tag as on the trainer).

A node that lacks the image answers `ImageNotPulled` (HTTP 409 on a session open; a grade item's
``sandbox_error``), whose message says what to run: ``coderl images pull REF`` (or the Harbor task's
directory, or the row's Dockerfile for a built tag; ``--ray`` on every sandbox node). Not a pull at request time: an image is minutes of
download (GBs for SWE-bench's), the request and its capacity slot would wait that long inside an
episode's budget, every replica asking at once, and the sandbox nodes would need the registry (and
its credentials) during training. A missing image is a deployment step left out: failing at once,
masked as ``sandbox_error`` (never scored as a wrong answer), is what tells the operator.

An image is looked up in the node's cache first, with no engine (a service in a container has none:
`coderl images pull` fills the cache from outside), then in the engine's local store
(`image_rootfs.unpacked`). A reference is resolved once per service process and then named
by its id, so a session and the grading of its diff use the same image even if a tag moves; a
re-pulled tag is seen after a restart. Image sessions are not pooled (the warm pool keys snapshots).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from coderl.errors import ImageNotPulled, ImageUnavailable, InvalidTask, SandboxError
from coderl.sandbox.image_build import BUILT_REPOSITORY
from coderl.sandbox.image_rootfs import USER_SPEC, ImageRoot, unpacked
from coderl.sandbox.session import EpisodeState, Session, SessionHost, SessionLimits
from coderl.swe.grade_status import GradeStatus
from coderl.swe.grader import GradeResult
from coderl.swe.harbor import HarborTask
from coderl.swe.harbor_grader import HarborResult, HarborRunner
from coderl.swe.image_grader import DEFAULT_PYTHON, ImageRepoGrader
from coderl.swe.request_rows import task_from_request
from coderl.swe.task import RepoTask

_REFERENCE = r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,511}$"


class ImageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reference: str = Field(pattern=_REFERENCE, description="an image reference or id this node's engine holds")
    python: str | None = Field(default=None, max_length=512, description="the interpreter with the task's pytest")
    workdir: str | None = Field(default=None, pattern=r"^/", max_length=4096)
    user: str | None = Field(default=None, pattern=USER_SPEC,
                             description="name, uid, name:group or uid:gid of the image (default: its User)")


class HarborIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$", description="a directory of CODERL_HARBOR_TASKS")
    image: str | None = Field(default=None, pattern=_REFERENCE)


@dataclass(frozen=True)
class ImageTask:
    """A request's image-backed task, read on this node: a repository task in ``image``, or ``harbor``."""

    repo: RepoTask | None = None
    image: str = ""
    python: str = DEFAULT_PYTHON
    workdir: str | None = None
    user: str | None = None
    harbor: HarborTask | None = None


class NodeImages:
    """This node's image-backed sessions and grading (one per session registry or grade route)."""

    def __init__(self, host: SessionHost, cache: Path, *, harbor_dir: Path | None = None, concurrency: int = 2) -> None:
        self.host, self.cache, self.harbor_dir = host, cache, harbor_dir
        self.grader = ImageRepoGrader(host, cache, concurrency=concurrency, pull=False)
        self.runner = HarborRunner(host, cache, concurrency=concurrency, fetch=False)
        self._roots: dict[str, ImageRoot] = {}

    @classmethod
    def from_env(cls, host: SessionHost, cache: Path) -> NodeImages:
        harbor = os.environ.get("CODERL_HARBOR_TASKS")
        return cls(host, cache, harbor_dir=Path(harbor) if harbor else None,
                   concurrency=int(os.environ.get("CODERL_SWE_CONCURRENCY", "2")))

    def task(self, row: dict[str, Any] | None, image: ImageIn | None, harbor: HarborIn | None) -> ImageTask | None:
        """The request's image-backed task (None: a snapshot task or an empty work tree). Raises
        InvalidTask for a request that names one wrongly (a 400, or the grade item's error)."""
        if harbor is not None:
            if row is not None or image is not None:
                raise InvalidTask("a Harbor task is named by 'harbor' alone (no 'task', no 'image')")
            if self.harbor_dir is None:
                raise InvalidTask("this service serves no Harbor tasks: start it with CODERL_HARBOR_TASKS set to a "
                                  "directory of Harbor task directories")
            task_dir = self.harbor_dir / harbor.task
            if not task_dir.is_dir():
                raise InvalidTask(f"no Harbor task {harbor.task!r} in this node's CODERL_HARBOR_TASKS")
            return ImageTask(harbor=HarborTask.from_row({"task_dir": str(task_dir), "image": harbor.image or ""}))
        if image is None:
            return None
        if row is None:
            raise InvalidTask("'image' names the environment of a repository task: send its row as 'task'")
        return ImageTask(repo=task_from_request(row), image=image.reference, python=image.python or DEFAULT_PYTHON,
                         workdir=image.workdir, user=image.user)

    async def root(self, reference: str) -> ImageRoot:
        """The unpacked image (from the cache, no engine needed; unpacked now when the engine holds
        it but the cache does not yet), resolved once per process."""
        if reference not in self._roots:
            try:
                self._roots[reference] = await asyncio.to_thread(unpacked, reference, self.cache)
            except ImageNotPulled as exc:
                if not reference.startswith(BUILT_REPOSITORY + "/"):
                    raise
                raise ImageNotPulled(f"image {reference} is built from a row's Dockerfile and is not on this node: "
                                     f"build it here with `coderl images pull DOCKERFILE` (the row's image, a Dockerfile "
                                     f"or its build context; --ray on every sandbox node)") from exc
        return self._roots[reference]

    async def open(self, task: ImageTask, limits: SessionLimits, *, ro_binds: tuple[str, ...],
                   gateway_socket: str, gateway_port: int) -> Session:
        """An episode's session in the task's image: the agent's user and work dir, never the tests."""
        if task.harbor is not None:
            harbor = task.harbor
            limits = dataclasses.replace(limits, memory_mb=harbor.memory_mb or limits.memory_mb,
                                         disk_mb=harbor.storage_mb or limits.disk_mb)
            return await self.runner.open_episode(harbor, ro_binds=ro_binds, gateway_socket=gateway_socket,
                                                  gateway_port=gateway_port, limits=limits)
        root = await self.root(task.image)
        try:
            root.identity(task.user)  # the row's fault, not the node's: a 400, never retried elsewhere
        except ImageUnavailable as exc:
            raise InvalidTask(f"the task's user: {exc}") from None
        return await self.host.open_image(root, workdir=task.workdir, user=task.user, limits=limits, ro_binds=ro_binds,
                                          gateway_socket=gateway_socket, gateway_port=gateway_port)

    async def grade(self, task: ImageTask, diff: str, state: EpisodeState | None = None) -> GradeResult | HarborResult:
        """The diff graded in a fresh sandbox from the pristine image; a Harbor task's verifier on
        the container the session left (``state``, removed once graded) when given."""
        if task.harbor is not None:
            return await self.runner.grade(task.harbor, diff, state)
        assert task.repo is not None
        try:
            image = await self.root(task.image)
        except SandboxError as exc:  # not on this node: the data's or the operator's fault, never the agent's
            return GradeResult(instance_id=task.repo.instance_id, status=GradeStatus.SANDBOX_ERROR,
                               reward=GradeStatus.SANDBOX_ERROR.reward, message=str(exc))
        return await self.grader.grade(task.repo, image.image_id, diff, python=task.python, workdir=task.workdir,
                                       user=task.user)


def result_wire(result: GradeResult | HarborResult) -> dict[str, Any]:
    """A grade as the routes answer it: a Harbor task's carries ``instance_id`` (its name) too."""
    out = result.to_dict()
    return {"instance_id": out["name"], **out} if isinstance(result, HarborResult) else out

