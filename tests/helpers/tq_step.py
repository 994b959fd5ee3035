"""One training step's sampling through verl 0.9.1's real transfer queue and coderl's sampler hook:
the agent-loop outputs put into the queue as verl's AgentLoopWorkerTQ puts them (its key layout,
``AgentLoopOutput.as_dict`` and verl's ``list_of_dict_to_tensordict``, its tags), each prompt's
group marked finished as the trainer marks it, then `coderl.verl.scored_grpo.ScoredReplayBuffer`
(the sampler the RL scripts name) samples the batch and returns the step's metrics, as the v1
trainer logs them. Needs Ray (the queue's controller is a Ray actor): started locally, stopped after."""

from __future__ import annotations

from typing import Any


def sampled_step_metrics(groups: dict[str, list[Any]], step: int = 1) -> dict[str, float]:
    """``groups``: prompt uid -> its `AgentLoopOutput`s (the rollout.n samples). The metrics of
    ``ScoredReplayBuffer.sample`` for a batch of every group."""
    import ray
    import torch
    import transfer_queue as tq
    from omegaconf import OmegaConf
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    from coderl.verl.scored_grpo import ScoredReplayBuffer

    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=8, include_dashboard=False, log_to_driver=False)
    try:
        tq.init()
        tq.kv_batch_put(keys=list(groups), partition_id="train",
                        tags=[{"is_prompt": True, "status": "pending", "global_steps": step} for _ in groups])
        for uid, outputs in groups.items():
            keys, fields, tags = [], [], []
            for session, output in enumerate(outputs):
                field = output.as_dict()
                field["loss_mask"] = field["response_mask"]
                field["input_ids"] = torch.cat([field["prompts"], field["responses"]])
                keys.append(f"{uid}_{session}_0")
                fields.append(field)
                tags.append({"status": "success", "prompt_len": field["prompts"].size(0),
                             "response_len": field["responses"].size(0), "global_steps": step,
                             "min_global_steps": field["extra_fields"].get("min_global_steps"),
                             "max_global_steps": field["extra_fields"].get("max_global_steps")})
            tq.kv_batch_put(keys=keys, partition_id="train", fields=list_of_dict_to_tensordict(fields), tags=tags)
            tq.kv_put(key=uid, partition_id="train", tag={"is_prompt": True, "status": "finished", "global_steps": step})
        sampler = ScoredReplayBuffer(trainer_mode="sync", trainer_config=OmegaConf.create({}),
                                     max_off_policy_threshold=None, max_off_policy_strategy="drop",
                                     sampler_kwargs=OmegaConf.create({}))
        _, metrics = sampler.sample(step, "train", len(groups))
        return metrics
    finally:
        tq.close()
        if started:
            ray.shutdown()
