"""coderl.judge: verdicts a trainer can trust as a reward and an evaluator as a score.

Tests in any supported format become one normalised `TestSpec` (`to_spec`); the program runs in
the sandbox, comparison happens outside it (`compare`), verdicts follow `PRECEDENCE`.
"""

from coderl.judge.extract import ExtractedCode, extract_code, strip_reasoning
from coderl.judge.formats import FORMATS, detect, to_spec
from coderl.judge.judge import DEFAULT_LIMITS, Judge, Submission
from coderl.judge.result import CaseResult, JudgeResult
from coderl.judge.spec import Checker, CompareOptions, TestSpec
from coderl.judge.verdict import PRECEDENCE, Verdict, worst

__all__ = [
    "CaseResult",
    "Checker",
    "CompareOptions",
    "DEFAULT_LIMITS",
    "ExtractedCode",
    "FORMATS",
    "Judge",
    "JudgeResult",
    "PRECEDENCE",
    "Submission",
    "TestSpec",
    "Verdict",
    "detect",
    "extract_code",
    "strip_reasoning",
    "to_spec",
    "worst",
]
