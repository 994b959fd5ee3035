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
  and ``image_user`` fields, as `coderl.swe.task_ref` reads them.
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
re-pulled tag is seen after a restart. An image task's sessions are pooled like a snapshot task's
(the pool's key: the image's id, work dir, user and limits); a Harbor task's are not.
These are the request's models; `coderl.swe.task_ref.TaskRef.from_request` reads them and
`coderl.swe.episodes.LocalEpisodes` (``fetch=False``) opens and grades them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from coderl.sandbox.image_rootfs import USER_SPEC

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
