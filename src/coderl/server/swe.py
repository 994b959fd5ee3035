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
``CODERL_WHEELHOUSE`` when set, and ``CODERL_SWE_CONCURRENCY`` (default 2) sandboxes grade at once,
this route's and the sessions' grading together (one host, one bound: `coderl.server.node`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from coderl.errors import BadRequest
from coderl.server.image_tasks import HarborIn, ImageIn
from coderl.server.node import node_of
from coderl.server.service import cancel_on_disconnect, service_of
from coderl.swe.grade_status import GradeResult
from coderl.swe.task import InvalidTask
from coderl.swe.task_ref import EMPTY, TaskRef

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
    node = await node_of(request.app)
    jobs: list[Callable[[], Awaitable[GradeResult]] | str] = []
    for item in body.items:
        if item.task is not None and item.image is None and item.harbor is None and node.config.repos is None:
            raise BadRequest("this service grades no repository tasks: start it with CODERL_SWE_REPOS set to a "
                             "directory of git mirrors or tarballs")
        try:
            ref = TaskRef.from_request(item.task, item.image.model_dump() if item.image else None,
                                       item.harbor.model_dump() if item.harbor else None,
                                       harbor_dir=node.config.harbor_dir)
        except InvalidTask as exc:
            jobs.append(str(exc))
            continue
        if ref.kind == EMPTY:
            jobs.append("an item names a task: 'task' (a repository row, with 'image' when it lives in one) or 'harbor'")
        else:
            jobs.append(partial(node.episodes.grade, ref, item.patch))
    work = [job() for job in jobs if not isinstance(job, str)]
    timeout = body.timeout_s or max(service.settings.request_timeout_s, 1800.0)
    with service.admission.admit(len(work)):
        graded = iter(await cancel_on_disconnect(request, asyncio.gather(*work), timeout))
    results = [{"error": job} if isinstance(job, str) else next(graded).to_dict() for job in jobs]
    return {**service.meta(), "results": results}
