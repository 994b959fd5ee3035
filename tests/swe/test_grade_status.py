"""GradeStatus: the reward each status gives, and the plain strings it is on the wire and in files."""

from __future__ import annotations

import json

from coderl.judge.verdict import Verdict
from coderl.swe.grade_status import GradeStatus
from coderl.swe.grader import GradeResult


def test_only_resolved_scores_and_a_sandbox_error_is_never_scored():
    rewards = {status.value: status.reward for status in GradeStatus}
    assert rewards == {"resolved": 1.0, "unresolved": 0.0, "tampered": 0.0, "apply_failed": 0.0, "no_patch": 0.0,
                       "sandbox_error": None}


def test_a_grade_is_plain_strings_in_json_and_equal_to_them():
    result = GradeResult(instance_id="t", status=GradeStatus.TAMPERED, reward=GradeStatus.TAMPERED.reward)
    row = json.loads(json.dumps(result.to_dict()))
    assert row["status"] == "tampered" and row["resolved"] is False and row["reward"] == 0.0
    assert GradeStatus(row["status"]) is GradeStatus.TAMPERED and GradeStatus.TAMPERED == "tampered"


def test_the_two_enums_share_one_word_only():
    """``sandbox_error`` means the same in both (our fault: retry or drop); no other grade status
    reads as a verdict, so a reader can never take one for the other."""
    assert {s.value for s in GradeStatus} & {v.value for v in Verdict} == {"sandbox_error"}
