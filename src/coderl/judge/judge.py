"""The judge: a submission and its tests in, one verdict per case and a summary out.

The program runs in the sandbox; everything that knows the expected answers runs here, outside it.
A run's status maps to a verdict (time/memory/output limits, runtime errors, sandbox errors keep
their own verdicts); only a clean run is compared, by the spec's mode. The submission's verdict is
the worst case verdict by `PRECEDENCE`, so a case failing in several ways always reads the same.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from coderl.errors import BadRequest, NoCodeFound
from coderl.judge import compare, harness
from coderl.judge.asserts import SplitTest, check_reports, parse_reports, split_asserts
from coderl.judge.extract import extract_code
from coderl.judge.formats import to_spec
from coderl.judge.result import STATUS_VERDICT, CaseResult, JudgeResult
from coderl.judge.signed import new_nonce, read_signed, signature
from coderl.judge.spec import TestSpec
from coderl.judge.special import SpecialJudge
from coderl.judge.verdict import Verdict, worst
from coderl.sandbox import Engine, Limits, Program, RunResult
from coderl.sandbox.engine import COMPILE_LIMITS

DEFAULT_LIMITS = Limits(cpu_s=6, wall_s=12, memory_mb=1024)


@dataclass(frozen=True, kw_only=True)
class Submission:
    """What to judge. Give ``code``, or ``response`` (a model output to extract the code from)."""

    spec: Any  # a TestSpec, or tests in any format `to_spec` reads
    language: str | None = None
    code: str | None = None
    response: str | None = None
    fn_name: str | None = None  # for formats that do not carry it (LiveCodeBench test lists)
    limits: Limits = DEFAULT_LIMITS
    stop_on_first_failure: bool = True
    total_time_s: float | None = None
    prelude: bool = True  # LiveCodeBench's import prelude before Python programs
    compile_s: float | None = None  # the compiler's CPU seconds (wall: twice); None: the engine's default


class Judge:
    """Judges submissions on an engine (in-process). ``await Judge(engine).judge(submission)``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.special = SpecialJudge(engine)

    async def judge(self, sub: Submission) -> JudgeResult:
        started = time.monotonic()
        spec = to_spec(sub.spec, fn_name=sub.fn_name)
        code, language, rule = self._code(sub)
        runs = self.engine.language(language)
        if runs.test_runner:
            raise BadRequest(f"{runs.name} runs the program's own tests (SandboxFusion's /run_code); "
                             "the judge brings the tests: send the program in its language")
        language = runs.name
        try:
            source = harness.program(spec, code, language)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        nonce = new_nonce()
        python = language == "python"
        tests = [split_asserts(c.code) for c in spec.cases] if spec.mode == "assert" else []  # type: ignore[union-attr]
        inputs = [harness.case_stdin(spec, i, nonce, tests[i] if tests else None, language)
                  for i in range(len(spec.cases))]

        verdicts: dict[int, CaseResult] = {}

        def stop(index: int, result: RunResult) -> bool:
            if spec.checker is not None:  # verdicts come from the checker afterwards
                return sub.stop_on_first_failure and not result.ok
            verdicts[index] = self._case(spec, index, result, nonce, tests)
            return sub.stop_on_first_failure and verdicts[index].verdict is not Verdict.ACCEPTED

        compile_limits = None if sub.compile_s is None else \
            COMPILE_LIMITS.replace(cpu_s=sub.compile_s, wall_s=sub.compile_s * 2)
        ex = await self.engine.execute(Program(language, source, prelude=python and sub.prelude), inputs, sub.limits,
                                       compile_limits=compile_limits, stop=stop,
                                       total_time_s=sub.total_time_s)
        base = dict(isolation=ex.isolation, code=code, language=language, extraction_rule=rule)
        if ex.compile is not None and not ex.compile.ok:
            verdict = Verdict.SANDBOX_ERROR if ex.compile.sandbox_error else Verdict.COMPILE_ERROR
            cases = [CaseResult(verdict=verdict if i == 0 else Verdict.SKIPPED, message=ex.compile.run.message)
                     for i in range(len(spec.cases))]
            return JudgeResult(verdict=verdict, cases=cases, compile_message=ex.compile.message[:4000],
                               wall_s=time.monotonic() - started, **base)
        if spec.checker is not None:
            cases = await self.special.check(spec, ex.results, sub.stop_on_first_failure)
        else:
            cases = [verdicts.get(i) or self._case(spec, i, r, nonce, tests) for i, r in enumerate(ex.results)]
        if sub.stop_on_first_failure:
            cases = _skip_after_first_failure(cases)
        return JudgeResult(verdict=worst([c.verdict for c in cases]), cases=cases,
                           wall_s=time.monotonic() - started, **base)

    @staticmethod
    def _code(sub: Submission) -> tuple[str, str, str | None]:
        if sub.code is not None:
            return sub.code, sub.language or "python", None
        if sub.response is None:
            raise NoCodeFound("a submission needs code or a response to extract it from")
        extracted = extract_code(sub.response, sub.language)
        return extracted.code, extracted.language, extracted.rule

    @staticmethod
    def _case(spec: TestSpec, index: int, result: RunResult, nonce: str, tests: list[SplitTest]) -> CaseResult:
        verdict = STATUS_VERDICT.get(result.status)
        if verdict is not None:
            return CaseResult(verdict=verdict, run=result, message=result.message)
        case = spec.cases[index]
        if spec.mode == "stdio":
            ok, why = compare.stdio(result.stdout.decode("utf-8", "replace"), case.output, spec.compare)  # type: ignore[union-attr]
        elif spec.mode == "function":
            signed, value = read_signed(result.stdout, nonce)
            ok, why = compare.values(value, case.output, spec.compare) if signed else (False, _NOT_TO_THE_END)  # type: ignore[union-attr]
        else:  # assert: none failed in the sandbox, and the ones taken out compare equal here
            ok, why = check_reports(parse_reports(result.stdout, signature(nonce)), tests[index].expected)
            if ok and not read_signed(result.stdout, nonce)[0]:
                ok, why = False, _NOT_TO_THE_END
        return CaseResult(verdict=Verdict.ACCEPTED if ok else Verdict.WRONG_ANSWER, run=result, message=why)


_NOT_TO_THE_END = "the tests did not run to the end (no completion signal)"


def _skip_after_first_failure(cases: list[CaseResult]) -> list[CaseResult]:
    """The engine pipelines runs, so a case after the first failure may have run before the stop
    reached the slot; its verdict must not count (a later time limit would change the verdict)."""
    first = next((i for i, c in enumerate(cases) if c.verdict not in (Verdict.ACCEPTED, Verdict.SKIPPED)), None)
    if first is None:
        return cases
    skipped = CaseResult(verdict=Verdict.SKIPPED, message="stopped after an earlier failure")
    return cases[:first + 1] + [c if c.verdict is Verdict.SKIPPED else skipped for c in cases[first + 1:]]
