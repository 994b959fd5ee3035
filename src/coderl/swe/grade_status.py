"""The status of a graded repository diff: the repository grader's counterpart of the judge's
`coderl.judge.verdict.Verdict`, kept apart from it because it means something else (a task's tests
on a patched repository, not a program's run on a test case) and is scored differently.

Who is at fault decides the status, and the status decides the reward: the agent's patch
(``resolved`` 1, everything else 0) or our side and the task data's (``sandbox_error``: no reward,
retry or drop the sample, never score it). docs/agent.md has the table.
"""

from __future__ import annotations

import enum


class GradeStatus(enum.StrEnum):
    RESOLVED = "resolved"  # every FAIL_TO_PASS and PASS_TO_PASS test passed, the run's records consistent
    UNRESOLVED = "unresolved"  # the tests ran and one did not pass (or the run was cut short)
    TAMPERED = "tampered"  # records only a patch working against the grader makes (``findings`` say which)
    APPLY_FAILED = "apply_failed"  # the diff is unreadable or does not apply
    NO_PATCH = "no_patch"  # the agent's work gave no diff to grade (its files make none); never graded
    SANDBOX_ERROR = "sandbox_error"  # ours or the task data's: no repository, environment or pytest, the sandbox failed

    @property
    def reward(self) -> float | None:
        """1 for a resolved task, None where nothing may be scored (a sandbox error), else 0."""
        if self is GradeStatus.SANDBOX_ERROR:
            return None
        return 1.0 if self is GradeStatus.RESOLVED else 0.0
