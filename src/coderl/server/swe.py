"""`POST /v1/swe/grade`: the repository grader as a batchable route.

A batch of (task row, diff) pairs, each graded in a fresh session sandbox (`coderl.swe.grader`);
one result per item, in order, with per-test verdicts. A row the grader cannot read is that item's
error (``{"error": ...}``), not the batch's. The repositories come from the directory the service
was started with (``CODERL_SWE_REPOS``: mirrors or tarballs; requests never name host paths),
snapshots and environments are kept under ``CODERL_CACHE``, wheels for the environments come from
``CODERL_WHEELHOUSE`` when set, and ``CODERL_SWE_CONCURRENCY`` (default 2) sandboxes grade at once.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from coderl.cache import default_cache_dir
from coderl.errors import BadRequest
from coderl.sandbox.session import SessionHost
from coderl.server.service import cancel_on_disconnect, service_of
from coderl.swe.grader import RepoGrader
from coderl.swe.store import RepoStore
from coderl.swe.task import InvalidTask, RepoTask

router = APIRouter()
_lock = asyncio.Lock()


class SweItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: dict[str, Any]
    patch: str = Field(default="", max_length=16 << 20)


class SweGradeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[SweItem] = Field(min_length=1, max_length=256)
    timeout_s: float | None = Field(default=None, gt=0, le=7200)


@router.post("/v1/swe/grade", summary="Grade agents' diffs against repository tasks (FAIL_TO_PASS / PASS_TO_PASS)")
async def grade(body: SweGradeRequest, request: Request) -> dict[str, Any]:
    service = service_of(request)
    grader = await _grader(request)
    parsed: list[RepoTask | str] = []
    for item in body.items:
        try:
            parsed.append(RepoTask.from_row(item.task))
        except InvalidTask as exc:
            parsed.append(str(exc))
    jobs = [(t, item.patch) for t, item in zip(parsed, body.items, strict=True) if isinstance(t, RepoTask)]
    timeout = body.timeout_s or max(service.settings.request_timeout_s, 1800.0)
    with service.admission.admit(len(jobs)):
        graded = iter(await cancel_on_disconnect(request, grader.grade_many(jobs), timeout))
    results = [next(graded).to_dict() if isinstance(t, RepoTask) else {"error": t} for t in parsed]
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
            host = SessionHost()
            host.start()
            state.swe_grader = RepoGrader(host, RepoStore(Path(repos), cache), env_cache=cache,
                                          find_links=Path(wheels) if wheels else None,
                                          concurrency=int(os.environ.get("CODERL_SWE_CONCURRENCY", "2")))
    return state.swe_grader  # type: ignore[no-any-return]
