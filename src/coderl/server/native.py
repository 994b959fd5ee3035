"""The native API: batch judging, single runs, capabilities, health and metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from coderl import __version__
from coderl.errors import BadRequest, to_wire
from coderl.judge import DEFAULT_LIMITS, JudgeResult, Submission
from coderl.local import run_reply, submission
from coderl.sandbox import Limits, Program, runtime_env
from coderl.sandbox.compile_cache import CompileCache
from coderl.server.models import JudgeRequest, RunRequest, SubmissionIn
from coderl.server.service import cancel_on_disconnect, service_of

router = APIRouter()


@router.post("/v1/judge", summary="Judge a batch of submissions against their tests")
async def judge(body: JudgeRequest, request: Request) -> dict[str, Any]:
    service = service_of(request)
    subs = [_submission(s, service.settings.default_memory_mb) for s in body.submissions]
    timeout = body.timeout_s or service.settings.request_timeout_s
    outcomes = await cancel_on_disconnect(request, service.judge_many(subs), timeout)
    results = [_result(s, o) for s, o in zip(body.submissions, outcomes, strict=True)]
    return {**service.meta(), "results": results}


def _submission(s: SubmissionIn, default_memory_mb: int) -> Submission | BadRequest:
    """The submission, or the error that makes it unjudgeable (reported for it alone)."""
    try:
        return submission(s.model_dump(), DEFAULT_LIMITS.replace(memory_mb=default_memory_mb))
    except BadRequest as exc:
        return exc


def _result(s: SubmissionIn, outcome: Any) -> dict[str, Any]:
    if isinstance(outcome, JudgeResult):
        return {"id": s.id, **outcome.to_dict(include_output=s.include_output)}
    return {"id": s.id, "verdict": None, "accepted": False,
            "error": to_wire(outcome)}


@router.post("/v1/run", summary="Run one program on one stdin (what a tool call needs)")
async def run(body: RunRequest, request: Request) -> dict[str, Any]:
    service = service_of(request)
    limits = body.limits.apply(Limits(cpu_s=10, wall_s=20, memory_mb=service.settings.default_memory_mb))
    with service.admission.admit():
        ex = await cancel_on_disconnect(
            request, service.engine.execute(Program(body.language, body.code), [body.stdin.encode()], limits),
            body.timeout_s or service.settings.request_timeout_s)
    return {**service.meta(), **run_reply(ex, service.engine)}


@router.get("/v1/capabilities", summary="Languages, versions, default limits and isolation")
async def capabilities(request: Request) -> dict[str, Any]:
    service = service_of(request)
    languages = {name: {"version": info.version, "compiled": info.compiled, "aliases": list(info.aliases)}
                 for name, info in service.engine.languages().items()}
    return {**service.meta(), "version": __version__, "slots": service.engine.size, "languages": languages,
            "default_limits": DEFAULT_LIMITS.replace(memory_mb=service.settings.default_memory_mb).to_dict(),
            "queue_capacity": service.settings.queue, "runtime_packages": runtime_env.packages(),
            "compile_cache": _compile_cache_state(service.engine.compile_cache)}


def _compile_cache_state(cache: CompileCache | None) -> dict[str, int] | None:
    """The compile cache an operator configured (--compile-cache-mb; None: off) and this process's
    hits and misses since it started."""
    if cache is None:
        return None
    return {"max_mb": cache.max_bytes >> 20, "hits": cache.hits, "misses": cache.misses}


@router.get("/healthz", summary="Liveness")
async def healthz(request: Request) -> dict[str, Any]:
    return {"status": "ok", **service_of(request).meta()}


@router.get("/readyz", summary="Readiness: a canary must be judged right")
async def readyz(request: Request) -> JSONResponse:
    service = service_of(request)
    ok, why = await service.canary()
    return JSONResponse({"ready": ok, "detail": why, **service.meta()}, status_code=200 if ok else 503)


@router.get("/metrics", summary="Prometheus metrics")
async def metrics(request: Request) -> Response:
    service = service_of(request)
    service.observe()
    return Response(service.metrics.render(), media_type="text/plain; version=0.0.4")
