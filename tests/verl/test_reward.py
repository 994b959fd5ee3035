"""The reward through verl 0.9.1's reward-loop `naive` manager, loaded the way main_ppo loads it,
on DataProto batches built with a real Qwen tokenizer, against the real sandbox service."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import coderl.verl.reward as code_reward
from tests.helpers.service import refused_url
from tests.verl.conftest import compose

pytestmark = pytest.mark.verl
REWARD_FILE = Path(code_reward.__file__)
TESTS = json.dumps({"mode": "stdio", "cases": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5\n", "output": "10\n"}]})
GOOD = "I will add.\n```python\na, b = map(int, input().split())\nprint(a + b)\n```"
WRONG = "```python\nprint(3)\n```"
LOOP = "```python\nwhile True:\n    pass\n```"
HOSTILE = "```python\nimport os\nos._exit(0)\n```"
NO_CODE = "The answer is obvious."


def dataproto(tokenizer, response: str, ground_truth: str = TESTS, extra: dict | None = None):
    from verl import DataProto

    p = tokenizer("<|im_start|>user\nAdd two numbers<|im_end|>\n<|im_start|>assistant\n")["input_ids"]
    r = tokenizer(response + "<|im_end|>")["input_ids"]
    prompts, responses = torch.tensor([p]), torch.tensor([r])
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "input_ids": torch.cat([prompts, responses], 1),
                 "attention_mask": torch.ones(1, len(p) + len(r), dtype=torch.long)},
        non_tensors={"data_source": np.array(["codecontests"], dtype=object),
                     "reward_model": np.array([{"style": "rule", "ground_truth": ground_truth}], dtype=object),
                     "extra_info": np.array([extra or {}], dtype=object),
                     "__num_turns__": np.array([2], dtype=object)})


def score(tokenizer, url: str, responses: list[str], **kwargs) -> list[dict]:
    from verl.trainer.ppo.reward import load_reward_manager

    overrides = [f"reward.custom_reward_function.path={REWARD_FILE}", "reward.custom_reward_function.name=compute_score",
                 f"+reward.custom_reward_function.reward_kwargs.sandbox_url={url}",
                 "+reward.custom_reward_function.reward_kwargs.retries=1"]
    overrides += [f"+reward.custom_reward_function.reward_kwargs.{k}={v}" for k, v in kwargs.items()]
    cfg = compose(overrides)

    async def main():
        manager = load_reward_manager(cfg, tokenizer)  # inside the loop, as verl's workers do
        assert type(manager).__name__ == "NaiveRewardManager"
        return await asyncio.gather(*(manager.run_single(dataproto(tokenizer, r)) for r in responses))

    return asyncio.run(main())


def test_scores_through_verls_naive_manager(tokenizer, sandbox_url):
    out = score(tokenizer, sandbox_url, [GOOD, WRONG, LOOP, HOSTILE, NO_CODE], cpu_s=1, wall_s=2)
    scores = [o["reward_score"] for o in out]
    infos = [o["reward_extra_info"] for o in out]
    assert scores == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert [i["verdict"] for i in infos] == ["accepted", "wrong_answer", "time_limit", "wrong_answer", "no_code"]
    assert [i["sandbox_error"] for i in infos] == [0, 0, 0, 0, 0]
    assert infos[1]["tests_passed"] == 1 and infos[1]["tests_total"] == 2
    keys = [sorted(i) for i in infos]
    assert all(k == keys[0] for k in keys)  # the same keys on every path
    assert all(isinstance(v, int | float | str) for i in infos for v in i.values())
    assert infos[0]["num_turns"] == 2 and infos[0]["extraction"] == "fence:python"


def test_fraction_mode_and_format_penalty(tokenizer, sandbox_url):
    out = score(tokenizer, sandbox_url, [WRONG, NO_CODE], score_mode="fraction", format_penalty=-0.5)
    assert out[0]["reward_score"] == 0.5 and out[0]["reward_extra_info"]["tests_total"] == 2
    assert out[1]["reward_score"] == -0.5


def test_sandbox_down_is_flagged_not_wrong(tokenizer):
    with refused_url() as dead:
        out = score(tokenizer, dead, [GOOD], sandbox_error_score=0.25)
    info = out[0]["reward_extra_info"]
    assert info["sandbox_error"] == 1 and info["verdict"] == "sandbox_error" and out[0]["reward_score"] == 0.25


def test_final_answer_only_not_tool_outputs(tokenizer, sandbox_url):
    multi = ("Let me test.\n<tool_call>\n{\"name\": \"code_interpreter\", \"arguments\": {\"code\": \"print(3)\"}}\n"
             "</tool_call>user\n<tool_response>\n```python\na, b = map(int, input().split())\nprint(a + b)\n```\n"
             "</tool_response>\nassistant\nSo the answer:\n```python\nprint(3)\n```")
    out = score(tokenizer, sandbox_url, [multi])[0]["reward_extra_info"]
    assert out["verdict"] == "wrong_answer" and out["tool_calls"] == 1


@pytest.mark.parametrize("ground_truth", [
    json.dumps({"input": ["1 2\n"], "output": ["3\n"], "fn_name": None, "type": "stdin_stdout"}),  # the recipe's
    json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]}),  # verl prime_code / APPS
    json.dumps({"language": "python", "test_cases": [{"type": "stdin_stdout", "input": "1 2\n", "output": "3\n", "fn_name": None}]}),
])
def test_every_ground_truth_form(ground_truth):
    res = asyncio.run(code_reward.compute_score("x", GOOD, ground_truth))  # embedded engine, no URL
    assert res["score"] == 1.0 and res["verdict"] == "accepted"


def test_function_call_ground_truth_embedded():
    gt = json.dumps({"input": [[1, 2]], "output": [[3]], "fn_name": "add", "type": "function_call"})
    good = "```python\nclass Solution:\n    def add(self, a, b):\n        return a + b\n```"
    assert asyncio.run(code_reward.compute_score("x", good, gt))["score"] == 1.0


def test_per_step_sample_log_through_verl(tokenizer, sandbox_url, tmp_path):
    """`log_dir`: every scored sample lands in <log_dir>/<step>.jsonl (the rollout's weights version
    plus one for training), which `coderl plot training --rollouts` reads; a log that cannot be
    written is a warning, never a failed step."""
    from verl.trainer.ppo.reward import load_reward_manager

    from coderl.plots.training import read_rollouts

    def run(log_dir: Path) -> list[dict]:
        cfg = compose([f"reward.custom_reward_function.path={REWARD_FILE}",
                       f"+reward.custom_reward_function.reward_kwargs.sandbox_url={sandbox_url}",
                       f"+reward.custom_reward_function.reward_kwargs.log_dir={log_dir}"])

        async def main():
            manager = load_reward_manager(cfg, tokenizer)
            batches = [dataproto(tokenizer, r, extra={"max_global_steps": 2, "index": i, "split": "train"})
                       for i, r in enumerate([GOOD, WRONG])]
            return await asyncio.gather(*(manager.run_single(b) for b in batches))

        return asyncio.run(main())

    out = run(tmp_path / "samples")
    lines = [json.loads(line) for line in (tmp_path / "samples" / "3.jsonl").read_text().splitlines()]
    assert sorted(r["verdict"] for r in lines) == ["accepted", "wrong_answer"]
    assert {r["step"] for r in lines} == {3} and {r["input"] for r in lines} == {"codecontests/train/0",
                                                                                 "codecontests/train/1"}
    assert sorted(lines[0]) == sorted({**out[0]["reward_extra_info"], "step": 0, "split": 0, "data_source": 0,
                                       "input": 0})
    series = read_rollouts(tmp_path / "samples")  # the figure's reader takes the reward's layout as it is
    assert series["verdict/accepted"] == [(3, 0.5)] and series["verdict/wrong_answer"] == [(3, 0.5)]
    assert series["tool_calls/mean"] == [(3, 0.0)]
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.warns(UserWarning, match="cannot log the sample"):
        again = run(blocked / "sub")
    assert [o["reward_score"] for o in again] == [1.0, 0.0]
