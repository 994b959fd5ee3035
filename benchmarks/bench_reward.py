"""Reward benchmark: samples/s of `coderl.verl.reward.compute_score` through verl 0.9.1's
reward-loop `naive` manager (per-sample ``run_single`` calls gathered on one event loop, as a
RewardLoopWorker runs them), against the service's own `/v1/judge` batch rate on the same
submissions in the same run. The second is what a custom batching reward manager could reach at
most; if the first is close, per-sample async scoring needs no custom manager.

    python benchmarks/bench_reward.py [--samples N] [--slots S]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import numpy as np
import torch

import coderl.verl.reward as code_reward
from coderl.client import SandboxClient
from coderl.server.launch import running_service

TESTS = {"mode": "stdio", "cases": [{"input": f"{i} {i * 3}\n", "output": f"{i * 4}\n"} for i in range(20)]}
ANSWER = "Let me add them.\n```python\na, b = map(int, input().split())\nprint(a + b)\n```"


def compose(overrides: list[str]):  # type: ignore[no-untyped-def]
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module

    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=overrides)


def batch(tokenizer, n: int) -> list:  # type: ignore[no-untyped-def]
    from verl import DataProto

    prompt = tokenizer("<|im_start|>user\nAdd two numbers<|im_end|>\n<|im_start|>assistant\n")["input_ids"]
    response = tokenizer(ANSWER + "<|im_end|>")["input_ids"]
    p, r = torch.tensor([prompt]), torch.tensor([response])
    return [DataProto.from_dict(
        tensors={"prompts": p, "responses": r, "input_ids": torch.cat([p, r], 1),
                 "attention_mask": torch.ones(1, len(prompt) + len(response), dtype=torch.long)},
        non_tensors={"data_source": np.array(["codecontests"], dtype=object),
                     "reward_model": np.array([{"style": "rule", "ground_truth": json.dumps(TESTS)}], dtype=object),
                     "extra_info": np.array([{"index": i}], dtype=object),
                     "__num_turns__": np.array([2], dtype=object)}) for i in range(n)]


async def through_verl(url: str, tokenizer, items: list) -> float:  # type: ignore[no-untyped-def]
    from verl.trainer.ppo.reward import load_reward_manager

    cfg = compose([f"reward.custom_reward_function.path={code_reward.__file__}",
                   f"+reward.custom_reward_function.reward_kwargs.sandbox_url={url}"])
    manager = load_reward_manager(cfg, tokenizer)
    await manager.run_single(items[0])  # warm: client, connections
    started = time.perf_counter()
    out = await asyncio.gather(*(manager.run_single(item) for item in items))
    elapsed = time.perf_counter() - started
    assert all(o["reward_score"] == 1.0 for o in out), out[0]
    return len(items) / elapsed


async def direct_batches(url: str, n: int, size: int = 64) -> float:
    subs = [{"response": ANSWER, "tests": TESTS, "stop_on_first_failure": True}] * n
    async with SandboxClient([url]) as client:
        await client.judge(subs[:1])
        started = time.perf_counter()
        results = await asyncio.gather(*(client.judge(subs[i:i + size]) for i in range(0, n, size)))
        elapsed = time.perf_counter() - started
    assert all(r["verdict"] == "accepted" for chunk in results for r in chunk)
    return n / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--slots", type=int, default=2)
    args = parser.parse_args()
    from transformers import AutoTokenizer

    from coderl.data.qwen_tokenizer import build_qwen_tokenizer

    tokenizer = AutoTokenizer.from_pretrained(build_qwen_tokenizer())
    items = batch(tokenizer, args.samples)
    with running_service(slots=args.slots, queue=1024) as url:
        per_sample = asyncio.run(through_verl(url, tokenizer, items))
        batched = asyncio.run(direct_batches(url, args.samples))
    print(f"{'samples (20 tests each)':44s}{args.samples}")
    print(f"{'verl naive manager, async compute_score':44s}{per_sample:8.1f} samples/s")
    print(f"{'/v1/judge in batches of 64 (upper bound)':44s}{batched:8.1f} samples/s")
    print(f"{'per-sample / batched':44s}{per_sample / batched:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
