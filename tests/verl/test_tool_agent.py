"""The code_interpreter tool inside verl 0.9.1's real ToolAgentLoop, driven by a scripted fake
model server: the tool call runs in the real sandbox, tool-response tokens are masked out of the
loss and the model's tokens are in."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.helpers.service import refused_url
from tests.verl.conftest import compose

pytestmark = pytest.mark.verl
TOOL_YAML = Path(__file__).resolve().parents[2] / "tool_config" / "code_interpreter.yaml"


class ScriptedServer:
    """Stands in for vLLM: answers each generate() with the next scripted assistant turn."""

    def __init__(self, tokenizer, turns: list[str]) -> None:
        self.tokenizer = tokenizer
        self.turns = list(turns)
        self.prompts: list[list[int]] = []

    async def generate(self, *, request_id, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.prompts.append(list(prompt_ids))
        text = self.turns.pop(0)
        return TokenOutput(token_ids=self.tokenizer(text + "<|im_end|>")["input_ids"], stop_reason="completed")


def make_loop(tokenizer, tiny_model, server, sandbox_url, monkeypatch):
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.utils.dataset.rl_dataset import RLHFDataset

    monkeypatch.setenv("CODERL_SANDBOX_URL", sandbox_url)
    cfg = compose([f"actor_rollout_ref.model.path={tiny_model}", "actor_rollout_ref.rollout.name=vllm",
                   "actor_rollout_ref.rollout.multi_turn.format=hermes",
                   "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=512",
                   f"actor_rollout_ref.rollout.multi_turn.tool_config_path={TOOL_YAML}",
                   "actor_rollout_ref.rollout.prompt_length=1024", "actor_rollout_ref.rollout.response_length=2048"])
    from verl.tools.tool_registry import initialize_tools_from_config as load_tools

    tools = load_tools(str(TOOL_YAML))
    return ToolAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer,
                         processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data),
                         hf_model_type="qwen2", tools=ToolListWrap(tools))


def test_tool_call_runs_in_sandbox_and_is_masked(tokenizer, tiny_model, sandbox_url, monkeypatch):
    call = {"name": "code_interpreter", "arguments": {"code": "print(6 * 7)"}}
    turns = ["Let me compute.\n<tool_call>\n" + json.dumps(call) + "\n</tool_call>",
             "The result is 42.\n```python\nprint(42)\n```"]
    server = ScriptedServer(tokenizer, turns)

    async def main():
        loop = make_loop(tokenizer, tiny_model, server, sandbox_url, monkeypatch)
        return await loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": "What is 6*7?"}],
                              tools_kwargs={"code_interpreter": {"create_kwargs": {}}})

    out = asyncio.run(main())
    response = tokenizer.decode(out.response_ids)
    assert "status: ok" in response and "stdout:\n42" in response  # the real sandbox ran it
    masked_in = tokenizer.decode([t for t, m in zip(out.response_ids, out.response_mask, strict=True) if m])
    masked_out = tokenizer.decode([t for t, m in zip(out.response_ids, out.response_mask, strict=True) if not m])
    assert "<tool_call>" in masked_in and "The result is 42." in masked_in
    assert "stdout:" in masked_out and "stdout:" not in masked_in
    assert out.num_turns >= 3


def test_tool_reports_limits_and_errors(tokenizer, tiny_model, sandbox_url, monkeypatch):
    from verl.tools.schemas import OpenAIFunctionToolSchema

    from coderl.interpreter import CODE_INTERPRETER_SCHEMA
    from coderl.verl.tool import CodeInterpreterTool

    monkeypatch.setenv("CODERL_SANDBOX_URL", sandbox_url)
    tool = CodeInterpreterTool({"type": "native", "max_timeout": 1, "max_output_chars": 100, "memory_mb": 64},
                               OpenAIFunctionToolSchema.model_validate(CODE_INTERPRETER_SCHEMA))

    async def run(params):
        return (await tool.execute("x", params))[0].text

    async def main():
        return [await run({"code": "while True: pass", "timeout": 99}), await run({"code": "print('a' * 1000)"}),
                await run({"code": "int main( {", "language": "cpp"}), await run({"code": ""}),
                await run({"code": "raise ValueError('boom')"}), await run({"code": "x = bytearray(300 << 20)"}),
                await run({"code": "print(1)", "language": "cobol"})]

    tle, long, ce, empty, error, mle, unknown = asyncio.run(main())
    assert tle.startswith("status: time limit exceeded")
    assert "characters cut" in long and len(long) < 400
    assert ce.startswith("status: compile error")
    assert empty.startswith("error:")
    assert error.startswith("status: runtime error") and "ValueError: boom" in error
    assert mle.startswith("status: memory limit exceeded")
    assert unknown.startswith("error:") and "cobol" in unknown and "python" in unknown  # the model's to fix

    with refused_url() as dead:
        down = CodeInterpreterTool({"type": "native", "sandbox_url": dead, "retries": 0},
                                   OpenAIFunctionToolSchema.model_validate(CODE_INTERPRETER_SCHEMA))
        response, reward, metrics = asyncio.run(down.execute("y", {"code": "print(1)"}))
    assert response.text.startswith("status: sandbox unavailable") and metrics["sandbox_error"] == 1 and reward == 0.0
