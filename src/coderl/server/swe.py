"""`POST /v1/swe/grade`: the repository grader as a batchable route.

A batch of (task row, diff) pairs, each graded in a fresh session sandbox (`coderl.swe.grader`);
one result per item, in order, with per-test verdicts. A row the grader cannot read is that item's
error (``{"error": ...}``), not the batch's. An item with ``image`` (a repository task whose
environment is an image) is graded from the pristine image with the image's own Python and pytest
(`coderl.swe.image_grader`); one with ``harbor`` (a task of ``CODERL_HARBOR_TASKS``) by the task's
verifier (`coderl.swe.harbor_grader`); both from this node's cache, never pulled at request time: a
missing image is that item's ``sandbox_error``, saying to pre-pull it (`coderl.server.image_tasks`). The repositories come from the directory the service
was started with (``CODERL_SWE_REPOS``: mirrors or tarballs; requests never name host paths),
snapshots and environments are kept under ``CODERL_CACHE``, wheels for the environments come from
``CODERL_WHEELHOUSE`` when set, and ``CODERL_SWE_CONCURRENCY`` (default 2) sandboxes grade at once.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from coderl.cache import default_cache_dir
from coderl.errors import BadRequest
from coderl.sandbox.session import SessionHost
from coderl.server.image_tasks import HarborIn, ImageIn, NodeImages, result_wire
from coderl.server.service import cancel_on_disconnect, service_of
from coderl.swe.grader import GradeResult, RepoGrader
from coderl.swe.harbor_grader import HarborResult
from coderl.swe.request_rows import task_from_request
from coderl.swe.store import RepoStore
from coderl.swe.task import InvalidTask

router = APIRouter()
_lock = asyncio.Lock()


class SweItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: dict[str, Any] | None = None
    image: ImageIn | None = None
    harbor: HarborIn | None = None
    patch: str = Field(default="", max_length=16 << 20)


class SweGradeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[SweItem] = Field(min_length=1, max_length=256)
    timeout_s: float | None = Field(default=None, gt=0, le=7200)


@router.post("/v1/swe/grade", summary="Grade agents' diffs against repository tasks (FAIL_TO_PASS / PASS_TO_PASS)")
async def grade(body: SweGradeRequest, request: Request) -> dict[str, Any]:
    service = service_of(request)
    images = await _images(request)
    jobs: list[Callable[[], Awaitable[GradeResult | HarborResult]] | str] = []
    for item in body.items:
        try:
            image_task = images.task(item.task, item.image, item.harbor)
            if image_task is not None:
                jobs.append(partial(images.grade, image_task, item.patch))
            elif item.task is None:
                jobs.append("an item names a task: 'task' (a repository row, with 'image' when it lives in one) "
                            "or 'harbor'")
            else:
                jobs.append(partial((await _grader(request)).grade, task_from_request(item.task), item.patch))
        except InvalidTask as exc:
            jobs.append(str(exc))
    work = [job() for job in jobs if not isinstance(job, str)]
    timeout = body.timeout_s or max(service.settings.request_timeout_s, 1800.0)
    with service.admission.admit(len(work)):
        graded = iter(await cancel_on_disconnect(request, asyncio.gather(*work), timeout))
    results = [{"error": job} if isinstance(job, str) else result_wire(next(graded)) for job in jobs]
    return {**service.meta(), "results": results}


async def _grader(request: Request) -> RepoGrader:
    """The app's grader, made on first use (most services never grade repository tasks)."""
    state = request.app.state
    async with _lock:
        if getattr(state, "swe_grader", None) is None:
            repos = os.environ.get("CODERL_SWE_REPOS")
            if not repos or not Path(repos).is_dir():
                raise BadRequest("this service grades no repository tasks: start it with CODERL_SWE_REPOS set to a "
                                 "directory of git mirrors or tarballs")
            cache = default_cache_dir()
            wheels = os.environ.get("CODERL_WHEELHOUSE")
            state.swe_grader = RepoGrader(_host(state), RepoStore(Path(repos), cache), env_cache=cache,
                                          find_links=Path(wheels) if wheels else None,
                                          concurrency=int(os.environ.get("CODERL_SWE_CONCURRENCY", "2")))
    return state.swe_grader  # type: ignore[no-any-return]


async def _images(request: Request) -> NodeImages:
    """The app's image-backed grading (`coderl.server.image_tasks`): nothing starts until an item needs it."""
    state = request.app.state
    async with _lock:
        if getattr(state, "swe_images", None) is None:
            state.swe_images = NodeImages.from_env(_host(state), default_cache_dir())
    return state.swe_images  # type: ignore[no-any-return]


def _host(state: Any) -> SessionHost:
    """The grade route's session host, shared by its graders (started on first use)."""
    if getattr(state, "swe_host", None) is None:
        state.swe_host = SessionHost()
        state.swe_host.start()
    return state.swe_host  # type: ignore[no-any-return]
