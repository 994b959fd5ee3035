"""Code RL records through verl 0.9.1's own pieces: the real ToolAgentLoop runs the code tool in
the real sandbox (scripted model), verl's naive reward manager scores the trajectory with our
reward, and the record the reward writes holds the prompt, the turns, the tool's sandbox run (from
the trajectory's extra_fields, as verl forwards them), the answer and the per-test verdicts."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
import torch

from tests.verl.conftest import compose
from tests.verl.test_reward import REWARD_FILE, TESTS
from tests.verl.test_tool_agent import ScriptedServer, make_loop

pytestmark = pytest.mark.verl


def test_code_rl_record_from_verls_tool_loop_and_reward_manager(tokenizer, tiny_model, sandbox_url, tmp_path,
                                                                 monkeypatch):
    from verl.trainer.ppo.reward import load_reward_manager

    from verl import DataProto

    call = {"name": "code_interpreter", "arguments": {"code": "print(6 * 7)"}}
    turns = ["Let me check.\n<tool_call>\n" + json.dumps(call) + "\n</tool_call>",
             "Done.\n```python\na, b = map(int, input().split())\nprint(a + b)\n```"]
    prompt = [{"role": "user", "content": "Add two numbers."}]
    extra_info = {"index": 3, "split": "train", "max_global_steps": 1}
    cfg = compose([f"reward.custom_reward_function.path={REWARD_FILE}",
                   f"+reward.custom_reward_function.reward_kwargs.sandbox_url={sandbox_url}",
                   f"+reward.custom_reward_function.reward_kwargs.record_dir={tmp_path / 'records'}"])

    async def main():
        loop = make_loop(tokenizer, tiny_model, ScriptedServer(tokenizer, turns), sandbox_url, monkeypatch)
        out = await loop.run({"temperature": 1.0}, raw_prompt=prompt,
                             tools_kwargs={"code_interpreter": {"create_kwargs": {}}})
        # what verl's AgentLoopWorker then does (agent_loop.py: _agent_loop_postprocess adds raw_prompt to
        # extra_fields; _compute_score hands extra_fields to the reward as tool_extra_fields)
        out.extra_fields["raw_prompt"] = prompt
        p, r = torch.tensor([out.prompt_ids]), torch.tensor([out.response_ids])
        batch = DataProto.from_dict(
            tensors={"prompts": p, "responses": r, "input_ids": torch.cat([p, r], 1),
                     "attention_mask": torch.ones(1, p.shape[1] + r.shape[1], dtype=torch.long)},
            non_tensors={"data_source": np.array(["livecodebench"], dtype=object),
                         "reward_model": np.array([{"style": "rule", "ground_truth": TESTS}], dtype=object),
                         "extra_info": np.array([dict(extra_info)], dtype=object),
                         "tool_extra_fields": np.array([out.extra_fields], dtype=object),
                         "__num_turns__": np.array([out.num_turns], dtype=object)})
        manager = load_reward_manager(cfg, tokenizer)
        return await manager.run_single(batch)

    scored = asyncio.run(main())
    assert scored["reward_score"] == 1.0
    (record,) = [json.loads(line) for line in (tmp_path / "records" / "2.jsonl").read_text().splitlines()]
    assert record["prompt"] == prompt and record["group"] == "livecodebench/train/3" and record["step"] == 2
    assert [t["role"] for t in record["turns"]] == ["assistant", "tool", "assistant"]
    assert record["turns"][0]["tool_calls"] == [call] and "stdout:\n42" in record["turns"][1]["content"]
    (run,) = record["tool_runs"]
    assert run["code"] == "print(6 * 7)" and run["status"] == "ok" and "42" in run["shown"] and run["seconds"] > 0
    assert record["verdict"] == "accepted" and record["reward"] == 1.0 and "print(a + b)" in record["answer"]
    assert [t["verdict"] for t in record["judge"]["tests"]] == ["accepted", "accepted"]
