"""The native API: batch judging, single runs, capabilities, health and metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from coderl import __version__
from coderl.errors import BadRequest, to_wire
from coderl.judge import DEFAULT_LIMITS, JudgeResult, Submission
from coderl.judge.formats import to_spec
from coderl.sandbox import Limits, Program, runtime_env
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
    base = DEFAULT_LIMITS.replace(memory_mb=default_memory_mb)
    spec = s.tests
    if s.format is not None:
        try:
            spec = to_spec(s.tests, s.format, fn_name=s.fn_name)
        except BadRequest as exc:
            return exc
    return Submission(spec=spec, language=s.language, code=s.code, response=s.response, fn_name=s.fn_name,
                      limits=s.limits.apply(base), stop_on_first_failure=s.stop_on_first_failure,
                      total_time_s=s.total_time_s)


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
            service.settings.request_timeout_s)
    compile_info = None
    if ex.compile is not None and (not ex.compile.ok or service.engine.language(ex.language).compile_argv is not None):
        # a compiled language always reports its compile step, as /run_code's compile_result does
        compile_info = {"ok": ex.compile.ok, "sandbox_error": ex.compile.sandbox_error,
                        "wall_s": round(ex.compile.run.wall_s, 6), "message": ex.compile.message[:8000]}
    return {**service.meta(), "language": ex.language, "compile": compile_info, "run": ex.results[0].to_dict()}


@router.get("/v1/capabilities", summary="Languages, versions, default limits and isolation")
async def capabilities(request: Request) -> dict[str, Any]:
    service = service_of(request)
    languages = {name: {"version": info.version, "compiled": info.compiled, "aliases": list(info.aliases)}
                 for name, info in service.engine.languages().items()}
    return {**service.meta(), "version": __version__, "slots": service.engine.size, "languages": languages,
            "default_limits": DEFAULT_LIMITS.replace(memory_mb=service.settings.default_memory_mb).to_dict(),
            "queue_capacity": service.settings.queue, "runtime_packages": runtime_env.packages()}


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
