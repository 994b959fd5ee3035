"""coderl.gateway.trajectory on its own: a branch's ids, loss mask and logprobs as turns append to it,
and forks when a request no longer extends the branch (kept turns, a turn the fork cuts through,
what the final branch drops)."""

from __future__ import annotations

import pytest

from coderl.gateway.trajectory import Branch, Trajectory, common_prefix

PROMPT, FIRST, TOOL, SECOND = [1, 2, 3], [10, 11, 12], [4], [20, 21]


def two_turns() -> Trajectory:
    """prompt (mask 0), a sampled turn, a tool result (mask 0), a second sampled turn."""
    traj = Trajectory()
    branch = traj.current
    branch.extend_context(PROMPT)
    branch.extend_sampled(FIRST, [-0.1, -0.2, -0.3], "stop")
    branch.extend_context(TOOL)
    branch.extend_sampled(SECOND, None, "length")
    return traj


def test_a_branch_records_what_was_sampled_and_what_was_not():
    branch = two_turns().current
    assert branch.ids == PROMPT + FIRST + TOOL + SECOND
    assert branch.mask == [0, 0, 0, 1, 1, 1, 0, 1, 1]
    assert branch.logprobs == [0.0, 0.0, 0.0, -0.1, -0.2, -0.3, 0.0, 0.0, 0.0]  # no logprobs: 0.0
    assert branch.prompt_len == 3 and branch.response_len == 6 and branch.sampled_tokens() == 5
    assert [(t.start, t.length, t.stop_reason) for t in branch.turns] == [(3, 3, "stop"), (7, 2, "length")]
    record = branch.to_dict()
    assert record["prompt_ids"] == PROMPT and record["response_ids"] == FIRST + TOOL + SECOND
    assert record["response_mask"] == [1, 1, 1, 0, 1, 1] and len(record["response_logprobs"]) == 6
    assert record["turns"][0] == {"start": 3, "length": 3, "stop_reason": "stop"} and record["demoted"] == 0


def test_a_branch_without_generations_has_no_response():
    branch = Branch()
    branch.extend_context([5, 6])
    assert (branch.prompt_len, branch.response_len, branch.sampled_tokens()) == (0, 0, 0)


def test_logprobs_must_match_the_ids():
    with pytest.raises(ValueError, match="3 token ids but 2 logprobs"):
        Branch().extend_sampled([1, 2, 3], [-1.0, -1.0], "stop")


@pytest.mark.parametrize("a, b, n", [([], [1], 0), ([1, 2, 3], [1, 2, 3], 3), ([1, 2, 3], [1, 2], 2),
                                     ([1, 2, 3], [1, 9, 3], 1), ([7], [8], 0)])
def test_common_prefix(a, b, n):
    assert common_prefix(a, b) == n == common_prefix(b, a)


def test_a_fork_after_a_whole_turn_keeps_it():
    """The harness rewrote the tool result: the first turn stays sampled, the second is gone."""
    traj = two_turns()
    new = traj.fork(PROMPT + FIRST + [99])
    assert traj.drifts == 1 and len(traj.branches) == 2 and traj.current is new
    assert new.ids == PROMPT + FIRST + [99] and new.mask == [0, 0, 0, 1, 1, 1, 0]
    assert new.logprobs[3:6] == [-0.1, -0.2, -0.3] and new.prompt_len == 3 and new.demoted == 0
    assert [(t.start, t.length) for t in new.turns] == [(3, 3)]


def test_a_fork_through_a_turn_demotes_its_head():
    """A re-tokenized history splits the first turn: its kept head is context, not a whole sample."""
    traj = two_turns()
    new = traj.fork(PROMPT + FIRST[:2] + [98, 5])
    assert new.mask == [0] * 7 and new.logprobs == [0.0] * 7
    assert new.demoted == 2 and new.turns == [] and new.prompt_len == 0
    assert traj.branches[0].mask == [0, 0, 0, 1, 1, 1, 0, 1, 1]  # the closed branch is untouched
    new.extend_sampled([30], [-0.5], "stop")
    assert new.prompt_len == 7 and new.to_dict()["response_ids"] == [30]


def test_final_branch_and_dropped_tokens():
    traj = two_turns()
    assert traj.final() is traj.current and traj.dropped_sampled_tokens() == 0
    new = traj.fork(PROMPT + FIRST[:2] + [98, 5])
    assert traj.final() is traj.branches[0]  # the fork has sampled nothing yet
    new.extend_sampled([30, 31], None, "stop")
    assert traj.final() is new
    # 5 sampled in the first branch, 2 in the second; only the second's 2 train
    assert traj.dropped_sampled_tokens() == 5
    assert len(traj.to_dict()["branches"]) == 2 and traj.to_dict()["drifts"] == 1


def test_a_fork_that_keeps_everything_counts_no_token_twice():
    traj = two_turns()
    new = traj.fork(PROMPT + FIRST + TOOL + SECOND + [6])  # extends the branch after all
    new.extend_sampled([40], None, "stop")
    assert new.sampled_tokens() == 6 and traj.dropped_sampled_tokens() == 0


def test_an_empty_trajectory():
    traj = Trajectory()
    assert traj.final() is traj.current and traj.dropped_sampled_tokens() == 0
    assert traj.to_dict() == {"branches": [{"prompt_ids": [], "response_ids": [], "response_mask": [],
                                            "response_logprobs": [], "turns": [], "demoted": 0}], "drifts": 0}
