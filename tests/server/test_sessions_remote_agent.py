"""The agent loop with its sessions remote (``sessions_url``): verl's `GatewayAgentLoop` runs a
repository task's episode in a session sandbox of a real `coderl serve` (the task named by its
row, the snapshot and environment the service's own), the harness reaches the loop's gateway
through the node's relay, and the diff is graded by the same service: resolved, reward 1, and the
token record is the gateway's, as in a local episode."""

from __future__ import annotations

import asyncio
import os
from unittest import mock

import pytest

from tests.helpers.qwen_tokenizer import build_tiny_model
from tests.helpers.service import running_service
from tests.verl.test_agent_loop import HERE, config, gold_fix_episode

pytestmark = pytest.mark.verl


def test_repo_episode_with_remote_sessions_is_graded_resolved(tokenizer, tmp_path):
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from coderl.sandbox import isolation
    from coderl.verl.agent_loop import GatewayAgentLoop

    tiny_model = build_tiny_model()
    row, extra_info, server = gold_fix_episode(tokenizer, tmp_path)
    command = f"{isolation.sandbox_python()} {HERE / 'scripted_agent.py'}"
    cfg = config(tiny_model, tmp_path, "sandbox", command, [])
    service_env = {"CODERL_SWE_REPOS": extra_info["repos_dir"], "CODERL_SESSION_BINDS": str(HERE),
                   "CODERL_SESSION_DIR": str(tmp_path / "sessions")}
    with mock.patch.dict(os.environ, service_env), running_service(slots=1) as url:
        async def main():
            loop = GatewayAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer,
                                    processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data),
                                    hf_model_type="qwen2", tools=ToolListWrap([]), command=command, timeout_s=180,
                                    score="repo", sessions_url=url)
            return await loop.run({"temperature": 1.0}, raw_prompt=list(row["prompt"]),
                                  data_source=row["data_source"], reward_model=dict(row["reward_model"]),
                                  extra_info=extra_info)

        out = asyncio.run(main())
        left = list((tmp_path / "sessions" / "layers").iterdir())
    assert out.extra_fields["sandbox_error"] == 0, out.extra_fields
    assert "applied" in tokenizer.decode(out.response_ids)  # the tool ran remotely and its output was recorded
    assert out.extra_fields["grade_status"] == "resolved" and out.reward_score == 1.0, out.extra_fields
    assert sum(out.response_mask) == sum(len(ids) for _, _, ids, _ in server.calls)  # the sampled tokens, mask 1
    assert left == [], left  # the episode's session was closed on the node
