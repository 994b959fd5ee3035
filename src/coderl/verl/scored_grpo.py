"""GRPO over the samples that were really scored: a sandbox failure is not a wrong answer.

A sample whose grading hit OUR failure (the sandbox service unreachable or broken after retries: the
code reward's ``sandbox_error`` extra, the agent loop's ``sandbox_error`` episode field) carries a
reward that says nothing about the policy. Scored 0 inside its GRPO group it would lower the
group's mean, change its standard deviation and push the policy away from what may be a right
answer (open-instruct measured 5-15% such fake zeros and drops them from the group statistics,
allenai/open-instruct#1887). Here such a sample contributes nothing:

- its loss mask is zero: `ScoredReplayBuffer`, verl 0.9.1's sampler hook
  (``trainer.v1.sampler.custom_sampler.path=pkg://coderl.verl.scored_grpo``,
  ``...custom_sampler.name=ScoredReplayBuffer``), zeroes ``response_mask`` and ``loss_mask`` in the
  transfer queue of every flagged sample of the batch it hands the trainer, before old log-probs,
  advantages and the actor read them (the agent loop zeroes its own at the source; the code reward
  runs after verl's tool loop built the mask, so this is the first place that sees both);
- it is left out of its group's mean and standard deviation: the ``grpo_scored`` estimator
  (``algorithm.adv_estimator=grpo_scored``, registered through ``core_algos.register_adv_est`` when
  this module is imported, which naming the sampler does in the trainer's process) runs verl's own
  GRPO (`compute_grpo_outcome_advantage`) on the samples with a trained token only; the others get
  advantage 0. A group left with fewer than two scored samples gets advantage 0 everywhere: verl's
  GRPO would give a lone sample its raw score as advantage, a gradient from no comparison at all;
- it is counted: the sampler's metrics join verl's step metrics (``coderl/sandbox_error_rate``:
  flagged / samples of the step, ``coderl/sandbox_error_samples``, ``coderl/groups_below_two_scored``;
  ``coderl/mask_check_s``, the seconds this check took).

The same metrics carry the step's reward-hack telemetry (`coderl.swe.hack_signals`, from the agent
loop's episode fields or the code reward's extras): ``coderl/hack/tampered_rate`` (share of the
step's samples graded ``tampered``) and ``coderl/hack/tampered``, ``coderl/hack/finding/<class>``
(findings per class), ``coderl/hack/tests_touched``, ``coderl/hack/ended_early``.

Why these hooks: verl 0.9.1's v1 trainer hands an estimator only rewards, ``response_mask`` and the
group ids (no reward extras, no metrics dict) and never writes a mask an estimator changes back to
the transfer queue, and the actor reads the masks from there; the sampler sees every trajectory's
``extra_fields`` (the reward's extras among them), may rewrite fields, and returns metrics that the
trainer logs with the step's. The zero mask is the flag the estimator reads: a sample with no
trained token (a sandbox error, or an episode whose harness never called the model) is no
evidence about the policy, and its advantage could not train anything anyway.

With ``CODERL_GRPO_LOG_DIR`` set (the RL scripts: ``OUTPUT_DIR/grpo``), both write what verl
computed to ``<dir>/grpo.jsonl``: one ``sample`` line per trajectory as the sampler found it (key,
group, flagged, its mask's trained tokens at rollout) and one ``advantage`` line per row the
estimator saw, with the mask verl read back (group, score, trained tokens, advantage); verl's own
rollout dump keeps neither masks nor advantages.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch
from verl.trainer.ppo.core_algos import (
    ADV_ESTIMATOR_REGISTRY,
    compute_grpo_outcome_advantage,
    register_adv_est,
)
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

from coderl.records.samples_log import append_line
from coderl.swe.hack_signals import step_metrics

ESTIMATOR = "grpo_scored"
RATE_METRIC = "coderl/sandbox_error_rate"
LOG_ENV = "CODERL_GRPO_LOG_DIR"
# the training step the sampler last handed out: the estimator runs on that batch in the same process
_current_step: int | None = None


def is_sandbox_error(extra_fields: Any) -> bool:
    """Whether a trajectory's ``extra_fields`` say its grading failed on our side: the agent loop's
    own field, or the code reward's extra (verl puts the reward's extras under ``reward_extra_info``)."""
    if not isinstance(extra_fields, dict):
        return False
    reward_extras = extra_fields.get("reward_extra_info") or {}
    return bool(extra_fields.get("sandbox_error")) or bool(
        isinstance(reward_extras, dict) and reward_extras.get("sandbox_error"))


def scored_grpo_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: np.ndarray,
                          epsilon: float = 1e-6, norm_adv_by_std_in_grpo: bool = True, config: Any = None,
                          **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's GRPO over the rows with a trained token, in groups of two or more such rows; every
    other row's advantage is 0 (see the module docstring). ``config`` (verl's AlgoConfig) decides
    ``norm_adv_by_std_in_grpo`` as it does for verl's estimator."""
    if config is not None:
        norm_adv_by_std_in_grpo = bool(config.get("norm_adv_by_std_in_grpo", norm_adv_by_std_in_grpo))
    trained = response_mask.sum(dim=-1)
    scored = (trained > 0).tolist()
    per_group = Counter(index[i] for i, ok in enumerate(scored) if ok)
    keep = [i for i, ok in enumerate(scored) if ok and per_group[index[i]] >= 2]
    advantages = torch.zeros_like(token_level_rewards)
    if keep:
        kept, _ = compute_grpo_outcome_advantage(token_level_rewards[keep], response_mask[keep],
                                                 np.asarray(index)[keep], epsilon=epsilon,
                                                 norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo)
        advantages[keep] = kept
    _log_advantages(token_level_rewards, advantages, response_mask, index, per_group)
    return advantages, advantages


if ESTIMATOR not in ADV_ESTIMATOR_REGISTRY:
    register_adv_est(ESTIMATOR)(scored_grpo_advantage)


class ScoredReplayBuffer(ReplayBuffer):
    """verl's sync replay buffer, plus: the flagged samples of each training batch get zero masks,
    and the step's metrics count them (module docstring)."""

    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[Any, dict]:
        global _current_step
        batch, metrics = super().sample(global_steps, partition_id, batch_size)
        if partition_id == "val" or not batch.keys:
            return batch, metrics
        _current_step = global_steps
        started = time.perf_counter()
        metrics.update(mask_sandbox_errors(batch, global_steps))
        metrics["coderl/mask_check_s"] = time.perf_counter() - started  # this hook's own cost per step
        return batch, metrics


def mask_sandbox_errors(batch: Any, step: int) -> dict[str, float]:
    """Zero the masks of ``batch``'s flagged trajectories in the transfer queue; the step's metrics."""
    import transfer_queue as tq
    from tensordict import TensorDict

    real = [i for i, tag in enumerate(batch.tags) if not tag.get("is_padding", False)]
    keys = [batch.keys[i] for i in real]
    data = tq.kv_batch_get(keys=keys, partition_id=batch.partition_id, select_fields=["extra_fields", "response_mask"])
    fields = [getattr(value, "data", value) for value in list(data["extra_fields"])]
    flagged = [is_sandbox_error(f) for f in fields]
    masks = list(data["response_mask"].unbind())
    bad = [i for i, f in enumerate(flagged) if f]
    if bad:
        zeros = torch.nested.as_nested_tensor([torch.zeros_like(masks[i]) for i in bad], layout=torch.jagged)
        tq.kv_batch_put(keys=[keys[i] for i in bad], partition_id=batch.partition_id,
                        fields=TensorDict({"response_mask": zeros, "loss_mask": zeros.clone()}, batch_size=len(bad)))
    scored_per_group: Counter[str] = Counter()
    for key, f, mask in zip(keys, flagged, masks, strict=True):
        scored_per_group[_group(key)] += int(not f and bool(mask.sum() > 0))
    log_dir = os.environ.get(LOG_ENV)
    if log_dir:
        for key, f, mask in zip(keys, flagged, masks, strict=True):
            append_line(Path(log_dir) / "grpo.jsonl", {
                "record": "sample", "step": step, "key": key, "uid": _group(key), "sandbox_error": int(f),
                "rollout_trained_tokens": int(mask.sum())})
    return {RATE_METRIC: len(bad) / len(keys) if keys else 0.0, "coderl/sandbox_error_samples": float(len(bad)),
            "coderl/groups_below_two_scored": float(sum(n < 2 for n in scored_per_group.values())),
            **step_metrics([hack_fields(f) for f in fields])}


def hack_fields(extra_fields: Any) -> dict[str, Any]:
    """A trajectory's reward-hack telemetry: the agent loop's own fields, else the code reward's
    extras (under ``reward_extra_info``)."""
    if not isinstance(extra_fields, dict):
        return {}
    reward_extras = extra_fields.get("reward_extra_info")
    return {**(reward_extras if isinstance(reward_extras, dict) else {}),
            **{k: v for k, v in extra_fields.items() if k.startswith("hack_")}}


def _group(key: str) -> str:
    """The GRPO group (the prompt's uid) of a transfer-queue key ``{uid}_{session}_{output}``."""
    return key.rsplit("_", 2)[0]


def _log_advantages(rewards: torch.Tensor, advantages: torch.Tensor, response_mask: torch.Tensor,
                    index: np.ndarray, per_group: Counter) -> None:
    """One ``advantage`` line per row: the advantage on its first trained token (0 without one) and
    the largest over all its tokens."""
    log_dir = os.environ.get(LOG_ENV)
    if not log_dir:
        return
    for i, score in enumerate(rewards.sum(dim=-1).tolist()):
        trained = response_mask[i] > 0
        append_line(Path(log_dir) / "grpo.jsonl", {
            "record": "advantage", "step": _current_step, "uid": str(index[i]), "score": float(score),
            "trained_tokens": int(trained.sum()), "group_scored": per_group[index[i]],
            "advantage": float(advantages[i][trained][0]) if bool(trained.any()) else 0.0,
            "advantage_abs_max": float(advantages[i].abs().max()) if advantages[i].numel() else 0.0})
