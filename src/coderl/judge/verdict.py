"""Verdicts about a program, and the precedence that makes a multiply-failing case deterministic.

A graded repository diff is not a program's run and has statuses of its own, never these:
`coderl.swe.grade_status.GradeStatus`."""

from __future__ import annotations

import enum


class Verdict(enum.StrEnum):
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    RUNTIME_ERROR = "runtime_error"
    COMPILE_ERROR = "compile_error"
    OUTPUT_LIMIT = "output_limit"
    SANDBOX_ERROR = "sandbox_error"  # our fault, never the program's: retry or drop, never score
    SKIPPED = "skipped"  # not run (stopped at first failure, budget spent)

    @property
    def short(self) -> str:
        return _SHORT[self]


_SHORT = {
    Verdict.ACCEPTED: "AC",
    Verdict.WRONG_ANSWER: "WA",
    Verdict.TIME_LIMIT: "TLE",
    Verdict.MEMORY_LIMIT: "MLE",
    Verdict.RUNTIME_ERROR: "RE",
    Verdict.COMPILE_ERROR: "CE",
    Verdict.OUTPUT_LIMIT: "OLE",
    Verdict.SANDBOX_ERROR: "SE",
    Verdict.SKIPPED: "SK",
}

# Worst first: the verdict of a submission is the first of these that any case has.
PRECEDENCE: tuple[Verdict, ...] = (
    Verdict.SANDBOX_ERROR,
    Verdict.COMPILE_ERROR,
    Verdict.TIME_LIMIT,
    Verdict.MEMORY_LIMIT,
    Verdict.OUTPUT_LIMIT,
    Verdict.RUNTIME_ERROR,
    Verdict.WRONG_ANSWER,
    Verdict.SKIPPED,
    Verdict.ACCEPTED,
)


def worst(verdicts: list[Verdict]) -> Verdict:
    """The submission-level verdict: accepted only when every case is accepted."""
    if not verdicts:
        return Verdict.SANDBOX_ERROR
    present = set(verdicts)
    for v in PRECEDENCE:
        if v in present:
            return v
    raise AssertionError("unreachable")
