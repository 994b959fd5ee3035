"""One agent-loop episode of the UNMODIFIED mini-swe-agent (its stock `mini` CLI, /opt/mini-swe-agent)
whose two turns are scripted: run one bash command, then submit. The harness, the sandbox (an image's,
for the image tests), the gateway, the diff and the grading (``score: repo``) are real."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

VENV = os.environ.get("MINI_SWE_AGENT_VENV", "/opt/mini-swe-agent")
MISSING = f"mini-swe-agent is not installed at {VENV} (MINI_SWE_AGENT_VENV): run scripts/install_mini_swe_agent.sh"


def installed() -> bool:
    return Path(VENV, "bin", "mini").exists()


def run_mini_episode(tmp_path: Path, bash: str, *, prompt: list[dict[str, str]], extra_info: dict[str, Any],
                     data_source: str, reward_model: dict[str, Any]) -> Any:
    """The episode's `AgentLoopOutput`: turn 1 runs ``bash``, turn 2 submits."""
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from coderl.verl.agent_loop import GatewayAgentLoop
    from tests.helpers.qwen_tokenizer import build_tiny_model
    from tests.verl.test_agent_loop import ScriptedServer, char_ids, config
    from tests.verl.test_agent_loop_mini import COMMAND, ENV

    tiny = build_tiny_model()
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    run = {"name": "bash", "arguments": {"command": bash}}
    submit = {"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}
    server = ScriptedServer(tokenizer, [
        char_ids(tokenizer, f"I will make the change.\n<tool_call>\n{json.dumps(run)}\n</tool_call>"),
        char_ids(tokenizer, f"Done. Submitting.\n<tool_call>\n{json.dumps(submit)}\n</tool_call>")])
    command = COMMAND.format(venv=VENV)
    cfg = config(tiny, tmp_path, "sandbox", command, [VENV])

    async def main() -> Any:
        loop = GatewayAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer,
                                processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data),
                                hf_model_type="qwen2", tools=ToolListWrap([]), command=command, placement="sandbox",
                                timeout_s=240, harness_binds=[VENV], env=ENV, score="repo")
        return await loop.run({"temperature": 1.0, "logprobs": True}, raw_prompt=prompt, data_source=data_source,
                              reward_model=reward_model, extra_info={**extra_info, "index": 0})

    return asyncio.run(main())
