"""Drop-in compatibility with SandboxFusion (``/run_code``, ``/v1/ping``) and ScaleBox
(``/common_evaluate_batch``, ``/common_evaluate``): their exact field names and enum values, with
our semantics where theirs are defective (docs/api.md lists the differences: LiveCodeBench-exact,
case-sensitive comparison instead of their lowercase/prefix rules; early exits never pass;
memory limits honoured; output never silently truncated)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
from typing import Any

from fastapi import APIRouter, Request

from coderl.errors import BadRequest, DeadlineExceeded, NoCodeFound, UnknownLanguage
from coderl.judge import Checker, Submission, Verdict, extract_code, worst
from coderl.judge.judge import CaseResult
from coderl.judge.result import STATUS_VERDICT
from coderl.sandbox import CompileResult, Limits, Program, RunInput, RunResult, RunStatus
from coderl.sandbox.engine import COMPILE_LIMITS
from coderl.sandbox.program import check_fetch_paths
from coderl.server.models import EvalRequest, RunCodeRequest
from coderl.server.scalebox import AssertPrograms, read_tests
from coderl.server.service import cancel_on_disconnect, service_of
from coderl.server.tests_done import NOT_TO_THE_END, ran_to_end

router = APIRouter()
#: SandboxFusion/ScaleBox language names that are not our names or aliases.
_SF_NAMES = {"d_ut": "d", "kotlin_script": "kotlin"}


@router.get("/v1/ping", summary="SandboxFusion liveness (the JSON string \"pong\")")
async def ping() -> str:
    return "pong"


@router.post("/run_code", summary="SandboxFusion /run_code")
async def run_code(body: RunCodeRequest, request: Request) -> dict[str, Any]:
    service = service_of(request)
    language = _sf_language(body.language, service)
    memory = service.settings.default_memory_mb if body.memory_limit_MB <= 0 else body.memory_limit_MB
    limits = Limits(cpu_s=body.run_timeout, wall_s=body.run_timeout, memory_mb=memory)
    compile_limits = Limits(cpu_s=body.compile_timeout, wall_s=body.compile_timeout, memory_mb=max(memory, 2048),
                            stdout_kb=64 * 1024, stderr_kb=256)
    try:
        files = {path: base64.b64decode(content, validate=True) for path, content in body.files.items()
                 if content is not None}
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(f"files: not base64 ({exc})") from None
    # A fetch path outside the work dir and /mnt is answered like a missing file (omitted), never read.
    fetch = tuple(path for path in body.fetch_files if _fetchable(path))
    run_input = RunInput(stdin=(body.stdin or "").encode(), files=files, fetch=fetch)
    # verl's SandboxFusion client retries a 504 and scores any other error as a failed case, so a
    # full queue answers 504 here (the native API answers 429), and so does a request that found
    # no free slot within queue_wait_s: answered before verl's read timeout, with nothing run.
    with service.admission.admit(when_full=DeadlineExceeded):
        ex = await cancel_on_disconnect(
            request, service.engine.execute(Program(language, body.code), [run_input], limits,
                                            compile_limits=compile_limits,
                                            queue_timeout_s=service.settings.queue_wait_s),
            service.settings.request_timeout_s)
    return {**_exec_info(ex, language, service), **service.meta()}


def _fetchable(path: str) -> bool:
    try:
        check_fetch_paths([path])
    except BadRequest:
        return False
    return True


def _exec_info(ex: Any, language: str, service: Any) -> dict[str, Any]:
    """SandboxFusion's response for one run; ``compile_result`` only for a compiled language. An
    interpreted program that does not even parse (our Python compiles before its first test) ran
    and failed there: ``run_result`` Finished, exit 1, the interpreter's message in stderr."""
    compiled_language = service.engine.language(language).compile_argv is not None
    if compiled_language or ex.compile is None or ex.compile.ok or ex.compile.sandbox_error:
        return sf_response(ex.compile if compiled_language or (ex.compile and not ex.compile.ok) else None,
                           ex.results[0])
    return sf_response(None, dataclasses.replace(ex.compile.run, status=RunStatus.RUNTIME_ERROR, exit_code=1))


def sf_response(compiled: CompileResult | None, run: RunResult | None) -> dict[str, Any]:
    """SandboxFusion's RunCodeResponse for a compile record and a run record."""
    compile_result = _command(compiled.run, sandbox_error=compiled.sandbox_error) if compiled else None
    if compiled is not None and not compiled.ok:
        compile_result = compile_result or {}
        if compile_result.get("return_code") == 0:
            compile_result["return_code"] = 1  # a failed compile must not read as a clean exit
        run_result = None
    else:
        run_result = _command(run) if run is not None else None
    steps = [r for r in (compile_result, run_result) if r is not None]
    if any(r["status"] == "Error" for r in steps):
        status = "SandboxError"
    elif any(r["status"] == "TimeLimitExceeded" for r in steps) or any(r["return_code"] not in (0, None) for r in steps):
        status = "Failed"
    else:
        status = "Success"
    message = ""
    if run is not None and run.status is not RunStatus.OK:
        message = f"{run.status.value}: {run.message}".strip(": ")
    if compiled is not None and not compiled.ok:
        message = "sandbox error while compiling" if compiled.sandbox_error else "compile error"
    return {"status": status, "message": message, "compile_result": compile_result, "run_result": run_result,
            "executor_pod_name": None,
            "files": {k: base64.b64encode(v).decode() for k, v in (run.files if run else {}).items()}}


def _command(run: RunResult, *, sandbox_error: bool = False) -> dict[str, Any]:
    if sandbox_error or run.status is RunStatus.SANDBOX_ERROR:
        status, code = "Error", None
    elif run.status is RunStatus.TIME_LIMIT:
        status, code = "TimeLimitExceeded", None
    else:
        status = "Finished"
        code = run.exit_code if run.exit_code is not None else (-run.signal if run.signal else 1)
        if run.status is not RunStatus.OK and code == 0:
            code = 1  # killed for a limit after exiting 0 would otherwise read as success
    return {"status": status, "execution_time": round(run.wall_s, 6), "return_code": code,
            "stdout": run.stdout.decode("utf-8", "replace"), "stderr": run.stderr.decode("utf-8", "replace")}


def _sf_language(name: str, service: Any) -> str:
    """Our language for a SandboxFusion/ScaleBox name: any name or alias the engine knows
    (case-insensitive), else our name for their spelling."""
    unknown: list[UnknownLanguage] = []
    for candidate in (name, _SF_NAMES.get(name.lower())):
        if candidate is not None:
            try:
                return service.engine.language(candidate).name
            except UnknownLanguage as exc:
                unknown.append(exc)
    raise next((exc for exc in unknown if exc.reason), unknown[0])  # one that says why (julia, not installed)


@router.post("/common_evaluate_batch", summary="ScaleBox batch evaluation of one completion")
async def common_evaluate_batch(body: EvalRequest, request: Request) -> dict[str, Any]:
    return await _evaluate(body, request)


@router.post("/common_evaluate", summary="ScaleBox evaluation of one completion")
async def common_evaluate(body: EvalRequest, request: Request) -> dict[str, Any]:
    return await _evaluate(body, request)


async def _evaluate(body: EvalRequest, request: Request) -> dict[str, Any]:
    service = service_of(request)
    cfg = body.config
    if cfg.custom_extract_logic is not None:
        raise BadRequest("config.custom_extract_logic is not supported (ScaleBox runs it inside its API server)")
    language = _sf_language(cfg.language, service)
    try:
        extracted = extract_code(body.completion, language)
        code, extracted_type = extracted.code, _EXTRACTED_TYPE.get(extracted.rule, "fenced")
    except NoCodeFound:
        code, extracted_type = "", "empty"
    tests = read_tests(cfg.provided_data, language, code)
    default_s = 20 if isinstance(tests, AssertPrograms) else 10  # ScaleBox's defaults for each kind of test
    compile_s = cfg.compile_timeout or default_s
    memory = cfg.mem_limit if cfg.mem_limit and cfg.mem_limit > 0 else service.settings.default_memory_mb
    limits = Limits(cpu_s=cfg.run_timeout or default_s, wall_s=cfg.run_timeout or default_s, memory_mb=memory)
    answer = {"id": body.id, "extracted_code": code, "full_code": None, "test_code": None,
              "extracted_type": extracted_type}
    if isinstance(tests, AssertPrograms):
        return {**answer, **await _run_asserts(tests, tests.language or language, limits, compile_s, service, request)}
    spec = tests
    extra = cfg.extra
    if extra.get("special_judge_program"):
        checker = Checker(kind="program", language=_sf_language(extra.get("special_judge_language", "python"), service),
                          code=extra["special_judge_program"], files="scalebox")
        spec = spec.model_copy(update={"checker": checker})
    run_all = bool(extra.get("run_all_cases", False))
    sub = Submission(spec=spec, language=language, code=code, stop_on_first_failure=not run_all,
                     total_time_s=float(extra.get("total_timeout", 300)), compile_s=compile_s, limits=limits)
    (outcome,) = await cancel_on_disconnect(request, service.judge_many([sub]), service.settings.request_timeout_s)
    if isinstance(outcome, Exception):
        raise outcome
    tests_out = []
    for case in outcome.cases:
        if case.verdict is Verdict.SKIPPED and not run_all and not (case.run and "budget" in case.run.message):
            break  # ScaleBox returns only the cases up to the first failure
        tests_out.append({"passed": case.verdict is Verdict.ACCEPTED, "exec_info": _case_exec_info(case, outcome)})
    return {**answer, "accepted": outcome.accepted, "tests": tests_out,
            "extra": {"verdict": outcome.verdict.value, **service.meta()}}


#: ScaleBox's ``extracted_type`` values for our extraction rules.
_EXTRACTED_TYPE = {"fence:open": "incomplete_fenced", "raw": "heuristic"}


async def _run_asserts(tests: AssertPrograms, language: str, limits: Limits, compile_s: float, service: Any,
                       request: Request) -> dict[str, Any]:
    """Non-Python assert tests: each program runs once and passes on SandboxFusion's Success with its
    tests' sentinel printed (`coderl.server.tests_done`), which the client's stdout does not show."""
    compile_limits = COMPILE_LIMITS.replace(cpu_s=compile_s, wall_s=compile_s * 2)
    with service.admission.admit(len(tests.sources)):
        runs = await cancel_on_disconnect(request, asyncio.gather(*(
            service.engine.execute(Program(language, source), [RunInput()], limits, compile_limits=compile_limits)
            for source in tests.sources)), service.settings.request_timeout_s)
    infos, verdicts = [], []
    for k, ex in enumerate(runs):
        ended = True
        sentinel = tests.sentinels[k] if k < len(tests.sentinels) else None
        if sentinel is not None and ex.results:
            ended, stdout = ran_to_end(ex.results[0].stdout, sentinel)
            ex = dataclasses.replace(ex, results=[dataclasses.replace(ex.results[0], stdout=stdout), *ex.results[1:]])
        info, verdict = _exec_info(ex, language, service), _run_verdict(ex)
        if verdict is Verdict.ACCEPTED and not ended:
            verdict = Verdict.WRONG_ANSWER
            info.update(status="Failed", message=NOT_TO_THE_END)
        infos.append(info)
        verdicts.append(verdict)
    return {"accepted": all(v is Verdict.ACCEPTED for v in verdicts),
            "full_code": (tests.shown or tests.sources)[0],
            "tests": [{"passed": v is Verdict.ACCEPTED, "exec_info": info} for v, info in zip(verdicts, infos, strict=True)],
            "extra": {"verdict": worst(verdicts).value, **service.meta()}}


def _run_verdict(ex: Any) -> Verdict:
    if ex.compile is not None and not ex.compile.ok:
        return Verdict.SANDBOX_ERROR if ex.compile.sandbox_error else Verdict.COMPILE_ERROR
    run = ex.results[0]
    return STATUS_VERDICT.get(run.status) or (Verdict.ACCEPTED if run.exit_code == 0 else Verdict.RUNTIME_ERROR)


def _case_exec_info(case: CaseResult, outcome: Any) -> dict[str, Any]:
    if case.verdict is Verdict.COMPILE_ERROR or (case.run is None and outcome.verdict is Verdict.COMPILE_ERROR):
        # ScaleBox compiles for every case, so every case it returns reports the compile error
        run = RunResult(status=RunStatus.RUNTIME_ERROR, exit_code=1, stderr=outcome.compile_message.encode())
        info = sf_response(CompileResult(ok=False, run=run), None)
    elif case.run is None or (case.verdict is Verdict.SKIPPED and "budget" in (case.run.message if case.run else "")):
        info = {"status": "SandboxError", "message": "Total Timeout" if case.verdict is Verdict.SKIPPED else case.message,
                "compile_result": None, "run_result": None, "executor_pod_name": None, "files": {}}
    else:
        info = sf_response(None, case.run)
    if case.verdict is Verdict.WRONG_ANSWER and info["status"] == "Success":
        info["status"] = "Failed"
        info["message"] = case.message
    return info
