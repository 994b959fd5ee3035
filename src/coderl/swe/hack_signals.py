"""Reward-hack telemetry of one graded episode, and the finding-class taxonomy it counts by.

A run where the policy starts working against the grader shows only as reward 0 to the optimiser;
these signals make it visible in the training curves (``coderl/hack/...`` step metrics of
`coderl.verl.scored_grpo`), in the episode records, in ``coderl view`` and in the ATIF/Harbor export.

Per episode (`episode_signals`, the same keys on every path, numbers only, so verl can batch them):

- ``hack_tampered``: the grader graded the episode ``tampered`` (1/0);
- ``hack_finding_<class>``: how many of its findings fall in each class of `FINDING_CLASSES`;
- ``hack_tests_touched``: its diff touched the task's test files, the test patch's files or a
  ``conftest.py`` (the grader drops those sections: ``GradeResult.tests_touched``);
- ``hack_ended_early``: the test process ended before the test runner finished (a finding ``exited 0
  before ...`` or the unresolved ``ended before ...``); for the code reward, a program that exited
  before the judge's completion signal (``the tests did not run to the end``).

The findings are the graders' sentences (`coderl.swe.verdicts`, `coderl.swe.unittest_verdicts`); the
class of each is decided here, in one place, by the words each kind of finding is written with. A
finding no rule knows counts as ``other`` (a new kind of finding shows in the curves at once, and the
rule for it belongs here).
"""

from __future__ import annotations

from typing import Any

#: class -> the phrases its findings are written with (the first class whose phrase a finding holds wins)
FINDING_CLASSES: dict[str, tuple[str, ...]] = {
    # the test process ended itself before the runner finished
    "early_exit": ("exited 0 before",),
    # the record stream: a forged, unreadable, repeated, out-of-order or late record or line
    "forged_record": ("not written by the reporter", "out of sequence", "a line the supervisor did not write",
                      "output after the supervisor's last line", "an unreadable supervisor line",
                      "hashes after the run began", "did not report how the test process ended", "record"),
    # pytest's report against our own view of the call
    "report_mismatch": ("reported passed, but", "reported skipped, but", "a call report without the call"),
    # code or state changed while the tests ran (test code, closures, trace hooks, raw memory)
    "runtime_rewrite": ("rewritten at run time", "not compiled from its file", "_callTestMethod is not"),
    # a function of the runner, pluggy, the reporter or a hook implementation replaced
    "replaced_function": ("replaced during the run",),
    # a test module, conftest, plugin or runner-shadowing file that is not the base commit's
    "changed_file": ("changed from the base commit", "the base commit does not have", "from outside the work tree",
                     "without a source file"),
    # the exit status against the runner's own, the failures, or the tests set up
    "exit_mismatch": ("exit status", "finished more than once", "exited 0 with", "tests collected"),
}
OTHER = "other"
CLASSES: tuple[str, ...] = (*FINDING_CLASSES, OTHER)
#: the per-episode keys, in order
KEYS: tuple[str, ...] = ("hack_tampered", *(f"hack_finding_{c}" for c in CLASSES), "hack_tests_touched",
                         "hack_ended_early")
#: the code reward's word for a program that ended before the judge's completion signal
_JUDGE_NOT_TO_THE_END = "did not run to the end"
_ENDED_BEFORE = ("exited 0 before", "ended before")


def finding_class(finding: str) -> str:
    """The class of one grader finding (`FINDING_CLASSES`; ``other`` when no phrase matches)."""
    return next((name for name, phrases in FINDING_CLASSES.items() if any(p in finding for p in phrases)), OTHER)


def episode_signals(grade: Any = None) -> dict[str, int]:
    """The episode's telemetry from its repository grader's result (a `GradeResult`, a Harbor
    result, or None when no grader ran: all zeros)."""
    out = dict.fromkeys(KEYS, 0)
    if grade is None:
        return out
    findings = [str(f) for f in getattr(grade, "findings", None) or []]
    for finding in findings:
        out[f"hack_finding_{finding_class(finding)}"] += 1
    out["hack_tampered"] = int(str(getattr(grade, "status", "")) == "tampered")
    out["hack_tests_touched"] = int(bool(getattr(grade, "tests_touched", None)))
    message = str(getattr(grade, "message", "") or "")
    out["hack_ended_early"] = int(any(p in text for text in (*findings, message) for p in _ENDED_BEFORE))
    return out


def judged_signals(result: dict[str, Any]) -> dict[str, int]:
    """The code reward's telemetry from the judge's result (the service's JSON): only the early end
    applies (no grader there can find tampering or test files)."""
    out = dict.fromkeys(KEYS, 0)
    cases = result.get("cases") or []
    out["hack_ended_early"] = int(any(_JUDGE_NOT_TO_THE_END in str((c or {}).get("message", "")) for c in cases
                                      if isinstance(c, dict)))
    return out


def record_block(fields: dict[str, Any]) -> dict[str, Any]:
    """The record's ``hack`` block from an episode's signals: the flags, and the finding classes seen
    (class -> count, the classes with none left out)."""
    findings = {c: int(_number(fields.get(f"hack_finding_{c}"))) for c in CLASSES}
    return {"tampered": int(_number(fields.get("hack_tampered"))),
            "tests_touched": int(_number(fields.get("hack_tests_touched"))),
            "ended_early": int(_number(fields.get("hack_ended_early"))),
            "findings": {c: n for c, n in findings.items() if n}}


def step_metrics(episodes: list[dict[str, Any]]) -> dict[str, float]:
    """One training step's ``coderl/hack/...`` metrics over its episodes' signals (each a dict with
    `KEYS`, missing keys read 0): the share graded tampered, the count of each finding class, the
    episodes that touched test files and that ended the test process early."""
    n = len(episodes)

    def total(key: str) -> float:
        return float(sum(_number(e.get(key)) for e in episodes))

    metrics = {"coderl/hack/tampered_rate": total("hack_tampered") / n if n else 0.0,
               "coderl/hack/tampered": total("hack_tampered"),
               "coderl/hack/tests_touched": total("hack_tests_touched"),
               "coderl/hack/ended_early": total("hack_ended_early")}
    metrics.update({f"coderl/hack/finding/{c}": total(f"hack_finding_{c}") for c in CLASSES})
    return metrics


def _number(value: Any) -> float:
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0
