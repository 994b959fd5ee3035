"""Special judges (checkers): run as their own sandboxed program over every clean run's output.

The checker is trusted with the expected answer (it needs it) but still runs in the sandbox; the
contestant program never sees it. A checker that fails is our fault (sandbox_error), not a verdict.
"""

from __future__ import annotations

from coderl.judge.result import STATUS_VERDICT, CaseResult
from coderl.judge.spec import Checker, TestSpec
from coderl.judge.verdict import Verdict
from coderl.sandbox import Engine, Limits, Program, RunInput, RunResult, RunStatus

_FUNCTION_RUNNER = """

def __coderl_check():
    import sys
    read = lambda name: open(name, encoding="utf-8", errors="replace").read()
    verdict = check(read("input.txt"), read("output.txt"), read("answer.txt"))
    ok, message = verdict if isinstance(verdict, tuple) else (verdict, "")
    print(message)
    sys.exit(0 if ok else 1)
__coderl_check()
"""
_WRONG_EXIT_CODES = (1, 2)  # testlib: WA, PE
# Python exits 1 on an uncaught exception, which testlib reads as "wrong answer": a crashing
# Python checker would blame the program. Python checkers therefore run inside this wrapper,
# which turns any crash into exit 3 (testlib's "fail": a sandbox error).
_PYTHON_WRAPPER = """import sys, traceback
try:
    exec(compile({source!r}, "checker.py", "exec"), globals())
except SystemExit:
    raise
except BaseException:
    traceback.print_exc()
    sys.exit(3)
"""


def checker_program(checker: Checker) -> Program:
    if checker.kind == "python_function":
        return Program("python", _PYTHON_WRAPPER.format(source=checker.code + _FUNCTION_RUNNER))
    if checker.language in ("python", "python3", "py"):
        return Program("python", _PYTHON_WRAPPER.format(source=checker.code))
    return Program(checker.language, checker.code)


def checker_files(checker: Checker, stdin: str, output: bytes, expected: str) -> dict[str, bytes]:
    if checker.kind == "program" and checker.files == "scalebox":
        return {"stdin.txt": stdin.encode(), "stdout.txt": expected.encode(), "answer.txt": output}
    return {"input.txt": stdin.encode(), "output.txt": output, "answer.txt": expected.encode()}


class SpecialJudge:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def check(self, spec: TestSpec, runs: list[RunResult], stop_on_first_failure: bool) -> list[CaseResult]:
        assert spec.checker is not None
        verdicts: dict[int, CaseResult] = {}
        clean = [i for i, r in enumerate(runs) if r.status is RunStatus.OK]
        for i, r in enumerate(runs):
            if r.status is not RunStatus.OK:
                verdicts[i] = CaseResult(verdict=STATUS_VERDICT[r.status], run=r, message=r.message)
        if clean:
            inputs = [RunInput(files=checker_files(spec.checker, spec.cases[i].input, runs[i].stdout,  # type: ignore[union-attr]
                                                   spec.cases[i].output)) for i in clean]  # type: ignore[union-attr]
            limits = Limits(cpu_s=spec.checker.cpu_s, wall_s=2 * spec.checker.cpu_s, memory_mb=1024)
            ex = await self.engine.execute(checker_program(spec.checker), inputs, limits,
                                           stop=(lambda _i, r: not r.ok) if stop_on_first_failure else None)
            for i, checked in zip(clean, ex.results, strict=True):
                verdicts[i] = _checker_verdict(ex.compiled, checked, runs[i],
                                               ex.compile.message if ex.compile is not None else "")
        return [verdicts[i] for i in range(len(runs))]


def _checker_verdict(compiled: bool, checked: RunResult, run: RunResult, compile_message: str) -> CaseResult:
    message = (checked.stdout + checked.stderr).decode("utf-8", "replace").strip()[:2000]
    if not compiled:
        return CaseResult(verdict=Verdict.SANDBOX_ERROR, run=run, message=f"checker does not compile: {compile_message[:500]}")
    if checked.status is RunStatus.SKIPPED:
        return CaseResult(verdict=Verdict.SKIPPED, run=run, message=checked.message)
    if checked.status is RunStatus.OK:
        return CaseResult(verdict=Verdict.ACCEPTED, run=run, message=message)
    if checked.status is RunStatus.RUNTIME_ERROR and checked.exit_code in _WRONG_EXIT_CODES:
        return CaseResult(verdict=Verdict.WRONG_ANSWER, run=run, message=message)
    return CaseResult(verdict=Verdict.SANDBOX_ERROR, run=run,
                      message=f"checker failed ({checked.status.value}, {checked.message}): {message[:500]}")
