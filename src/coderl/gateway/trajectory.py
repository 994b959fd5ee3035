"""The token record of one agent session: what the policy saw and what it sampled, token for token.

A session is a list of branches. A branch is one flat token sequence ``ids`` with a loss ``mask``
(1: the policy sampled it, 0: the prompt, tool results, user turns, template glue) and the
sampled tokens' ``logprobs`` (0.0 where the mask is 0). Every turn appends to the current branch:
first the new context the environment wrote (mask 0), then the sampled tokens (mask 1). Tokens are
never re-tokenized: sampled ids are stored as the backend returned them.

When a request no longer extends the current branch (the harness edited or dropped history,
compacted its context, or the chat template rewrote an earlier turn) the branch is closed and a
new one forks from the longest common token prefix, the way slime's TrajectoryManager does: the
retained prefix keeps its masks and logprobs, except that an output the fork point cuts through is
demoted to mask 0 (its tail is no longer in the context, so the kept part is not a whole sampled
turn). Each branch is then a valid sample on its own; `Trajectory.drifts` counts the forks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Turn:
    """One generation: where its sampled tokens sit in the branch, and why it stopped."""

    start: int  # index of the first sampled token in Branch.ids
    length: int
    stop_reason: str  # "stop" (end of turn) or "length" (max_new_tokens reached)


@dataclass
class Branch:
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    prompt_len: int = 0  # tokens before the first generation of this branch: verl's prompt_ids
    turns: list[Turn] = field(default_factory=list)
    demoted: int = 0  # sampled tokens kept as context only (mask 0) when this branch was forked

    def extend_context(self, ids: list[int]) -> None:
        """Tokens the environment wrote (tool results, user turns, template glue): mask 0."""
        self.ids.extend(ids)
        self.mask.extend([0] * len(ids))
        self.logprobs.extend([0.0] * len(ids))

    def extend_sampled(self, ids: list[int], logprobs: list[float] | None, stop_reason: str) -> None:
        if logprobs is not None and len(logprobs) != len(ids):
            raise ValueError(f"backend returned {len(ids)} token ids but {len(logprobs)} logprobs")
        if not self.turns:
            self.prompt_len = len(self.ids)
        self.turns.append(Turn(len(self.ids), len(ids), stop_reason))
        self.ids.extend(ids)
        self.mask.extend([1] * len(ids))
        self.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))

    @property
    def response_len(self) -> int:
        return len(self.ids) - self.prompt_len if self.turns else 0

    def sampled_tokens(self) -> int:
        return sum(self.mask)

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_ids": self.ids[: self.prompt_len], "response_ids": self.ids[self.prompt_len:],
                "response_mask": self.mask[self.prompt_len:], "response_logprobs": self.logprobs[self.prompt_len:],
                "turns": [t.__dict__ for t in self.turns], "demoted": self.demoted}


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class Trajectory:
    branches: list[Branch] = field(default_factory=lambda: [Branch()])
    drifts: int = 0

    @property
    def current(self) -> Branch:
        return self.branches[-1]

    def fork(self, new_ids: list[int]) -> Branch:
        """Start a branch whose context is ``new_ids`` (the full re-rendered request). The prefix it
        shares with the current branch keeps that branch's masks and logprobs; a sampled turn the
        fork point cuts through is demoted to mask 0; the rest of ``new_ids`` is mask 0."""
        old = self.current
        k = common_prefix(old.ids, new_ids)
        new = Branch(ids=list(new_ids[:k]), mask=list(old.mask[:k]), logprobs=list(old.logprobs[:k]))
        for turn in old.turns:
            end = turn.start + turn.length
            if end <= k:
                new.turns.append(turn)
            elif turn.start < k:  # cut through: the kept head is context, not a whole sampled turn
                for i in range(turn.start, k):
                    new.mask[i], new.logprobs[i] = 0, 0.0
                new.demoted += k - turn.start
        new.prompt_len = old.prompt_len if new.turns else 0
        new.extend_context(new_ids[k:])
        self.drifts += 1
        self.branches.append(new)
        return new

    def final(self) -> Branch:
        """The branch that produced the outcome (the last one that sampled anything)."""
        for branch in reversed(self.branches):
            if branch.turns:
                return branch
        return self.current

    def dropped_sampled_tokens(self) -> int:
        """Sampled tokens that do not train when only the final branch is kept (verl's one sample
        per prompt): earlier branches' turns past their fork point, and demoted heads."""
        return self._unique_sampled() - self.final().sampled_tokens()

    def _unique_sampled(self) -> int:
        """Sampled tokens counted once: a fork copies its retained prefix (same positions, same
        tokens) from its parent, so only tokens past each branch's shared prefix are new."""
        count = 0
        prev: Branch | None = None
        for branch in self.branches:
            shared = common_prefix(prev.ids, branch.ids) if prev is not None else 0
            count += sum(1 for turn in branch.turns for i in range(turn.start, turn.start + turn.length) if i >= shared)
            prev = branch
        return count

    def to_dict(self) -> dict[str, Any]:
        return {"branches": [b.to_dict() for b in self.branches], "drifts": self.drifts}
