"""The agent loop's image-backed episodes: rows whose task lives in an image run the harness in an
image-backed session and are graded from the pristine image.

Two row kinds (``extra_info``):
- a Harbor task (``coderl data harbor``): ``harbor_task`` (JSON: task_dir, image), ``cache_dir``;
- a repository task with an image (a ``coderl data swe`` row plus ``image``: a SWE-bench /
  SWE-Gym / SWE-smith / R2E-Gym image reference, or an absolute path: a Dockerfile or a build
  context, built once by content, `coderl.sandbox.image_build`): ``task`` (JSON row), ``image``,
  optional ``image_python`` (the interpreter with the task's pytest; default ``python3``),
  ``workdir`` (default: the image's WorkingDir) and ``image_user`` (default: the image's User; the
  episode's and the grading run's), ``cache_dir``.
One runner and one grader per cache directory, sharing the worker's session host.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from coderl.cache import default_cache_dir
from coderl.errors import InvalidTask
from coderl.sandbox.image_build import obtained, reference_of
from coderl.sandbox.session import EpisodeState, SessionHost, SessionLimits
from coderl.swe.grade_status import GradeStatus
from coderl.swe.grader import GradeResult
from coderl.swe.harbor import HarborTask
from coderl.swe.harbor_grader import HarborResult, HarborRunner
from coderl.swe.harness import SANDBOX_PORT, HarnessResult, run_in_session
from coderl.swe.image_grader import DEFAULT_PYTHON, ImageRepoGrader
from coderl.swe.task import RepoTask


def is_image_row(extra_info: dict[str, Any]) -> bool:
    return bool(extra_info.get("harbor_task") or extra_info.get("image"))


class ImageEpisodes:
    def __init__(self, host: SessionHost) -> None:
        self.host = host
        self._runners: dict[Path, HarborRunner] = {}
        self._graders: dict[Path, ImageRepoGrader] = {}

    def _cache(self, info: dict[str, Any]) -> Path:
        return Path(info["cache_dir"]) if info.get("cache_dir") else default_cache_dir()

    def runner(self, info: dict[str, Any]) -> HarborRunner:
        cache = self._cache(info)
        return self._runners.setdefault(cache, HarborRunner(self.host, cache))

    async def run_harness(self, info: dict[str, Any], template: str, *, task: str, gateway_socket: str,
                          session_id: str, model: str, timeout_s: float, harness_binds: tuple[str, ...] = (),
                          env: dict[str, str] | None = None) -> HarnessResult:
        """The harness's episode in the row's image (its one way out: the gateway relay)."""
        if info.get("harbor_task"):
            harbor = HarborTask.from_row(info["harbor_task"])
            return await self.runner(info).run_agent(harbor, template, gateway_socket=gateway_socket,
                                                     session_id=session_id, model=model, timeout_s=timeout_s,
                                                     harness_binds=harness_binds, env=env)
        image = await asyncio.to_thread(obtained, info["image"], self._cache(info))
        workdir = info.get("workdir") or image.workdir

        async def open_session(harness_env: dict[str, str]) -> Any:
            return await self.host.open_image(image, workdir=workdir, user=info.get("image_user") or None,
                                              ro_binds=harness_binds,
                                              limits=SessionLimits(episode_s=timeout_s + 30, exec_s=timeout_s),
                                              gateway_socket=gateway_socket, gateway_port=SANDBOX_PORT,
                                              env={**harness_env, **(env or {})})

        return await run_in_session(template, open_session=open_session, task=task, workdir=workdir,
                                    session_id=session_id, model=model, timeout_s=timeout_s, capture_diff=True)

    async def grade(self, info: dict[str, Any], diff: str | None, state: EpisodeState | None = None,
                    ) -> GradeResult | HarborResult:
        """The episode graded: a Harbor task's in the container it left (``state``, removed here; the
        harness result's), a repository task's diff from the pristine image (none graded as an empty
        one); a row without a readable task is a ``sandbox_error`` (the data's fault, never the agent's)."""
        try:
            if info.get("harbor_task"):
                return await self.runner(info).grade(HarborTask.from_row(info["harbor_task"]), diff or "", state)
            task = RepoTask.from_row(json.loads(info["task"]))
        except (KeyError, TypeError, ValueError, InvalidTask) as exc:
            if state is not None:
                state.remove()
            return GradeResult(instance_id=str(info.get("instance_id", "")), status=GradeStatus.SANDBOX_ERROR,
                               reward=GradeStatus.SANDBOX_ERROR.reward, message=f"the row carries no readable task: {exc}")
        cache = self._cache(info)
        grader = self._graders.setdefault(cache, ImageRepoGrader(self.host, cache))
        return await grader.grade(task, info["image"], diff or "", python=info.get("image_python") or DEFAULT_PYTHON,
                                  workdir=info.get("workdir") or None, user=info.get("image_user") or None)


def remote_task(info: dict[str, Any]) -> dict[str, Any]:
    """What a session service is sent for an image row (``coderl.server.image_tasks``): ``task`` and
    ``image``, or ``harbor``: the Harbor task's directory name (the service reads its own copy). An
    image built from a Dockerfile is named by its tag (the node builds it ahead: `coderl images pull`)."""
    if info.get("harbor_task"):
        row = info["harbor_task"]
        row = json.loads(row) if isinstance(row, str) else dict(row)
        return {"harbor": {"task": Path(row["task_dir"]).name, "image": row.get("image") or None}}
    return {"task": json.loads(info["task"]),
            "image": {"reference": reference_of(info["image"]), "python": info.get("image_python") or None,
                      "workdir": info.get("workdir") or None, "user": info.get("image_user") or None}}
