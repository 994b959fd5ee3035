"""GRPO over the scored samples (coderl.verl.scored_grpo): a sandbox-error sample contributes nothing.
The statistics through verl 0.9.1's own compute_advantage path (the registered estimator, as the
v1 trainer calls it), against verl's GRPO on the same batch without the failed samples; and the
smoke runs' fault switch (scripts/smoke_fault_proxy.py) in front of the real service, with the real
reward behind it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch

from coderl.verl import scored_grpo
from tests.helpers.service import free_port

pytestmark = pytest.mark.verl
ROOT = Path(__file__).resolve().parents[2]


def batch(groups: dict[str, list[float | None]], length: int = 5):
    """verl's DataProto as the v1 trainer hands it to compute_advantage: one row per sample, the
    score on its last token; ``None`` is a sandbox error (its mask zeroed by the sampler)."""
    from verl import DataProto

    uids, scores, masks = [], [], []
    for uid, values in groups.items():
        for value in values:
            uids.append(uid)
            scores.append(0.0 if value is None else value)
            masks.append(0 if value is None else 1)
    rewards = torch.zeros(len(uids), length)
    rewards[:, -1] = torch.tensor(scores)
    mask = torch.tensor(masks).unsqueeze(-1).repeat(1, length)
    return DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                               non_tensors={"uid": np.array(uids, dtype=object)})


def advantages(data, estimator: str = scored_grpo.ESTIMATOR, norm: bool = True) -> torch.Tensor:
    from omegaconf import OmegaConf
    from verl.trainer.ppo.ray_trainer import compute_advantage

    config = OmegaConf.create({"norm_adv_by_std_in_grpo": norm})
    return compute_advantage(data, adv_estimator=estimator, norm_adv_by_std_in_grpo=norm,
                             config=config).batch["advantages"]


@pytest.mark.parametrize("norm", [True, False])
def test_a_group_with_failures_equals_the_group_without_them(norm: bool) -> None:
    with_failures = batch({"a": [1.0, None, 0.0, 1.0, None, 0.0], "b": [0.0, 1.0, 1.0, None]})
    without = batch({"a": [1.0, 0.0, 1.0, 0.0], "b": [0.0, 1.0, 1.0]})
    ours = advantages(with_failures, norm=norm)
    scored = with_failures.batch["response_mask"].sum(-1) > 0
    # verl's own GRPO on the batch without the failed samples
    assert torch.allclose(ours[scored], advantages(without, estimator="grpo", norm=norm))
    assert ours[~scored].abs().max() == 0  # the failed samples: advantage 0 on every token
    # and the same batch without failures is verl's GRPO exactly
    assert torch.allclose(advantages(without, norm=norm), advantages(without, estimator="grpo", norm=norm))


def test_a_group_left_with_fewer_than_two_scored_samples_gets_no_gradient() -> None:
    data = batch({"one_left": [1.0, None, None, None], "none_left": [None, None], "fine": [1.0, 0.0]})
    ours = advantages(data)
    uids = data.non_tensor_batch["uid"]
    assert ours[uids != "fine"].abs().max() == 0
    assert ours[uids == "fine"].abs().max() > 0
    # verl's GRPO would have given the lone scored sample its raw score as advantage
    lone = batch({"one_left": [1.0]})
    assert advantages(lone, estimator="grpo").max() == pytest.approx(1.0)
    assert advantages(lone).abs().max() == 0


def test_through_verls_multi_trajectory_path_and_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The v1 trainer's entry (compute_advantage_for_multi_trajectories) reaches the estimator by
    its registered name; with CODERL_GRPO_LOG_DIR every row's advantage is on record."""
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    assert get_adv_estimator_fn(scored_grpo.ESTIMATOR) is scored_grpo.scored_grpo_advantage
    monkeypatch.setenv(scored_grpo.LOG_ENV, str(tmp_path))
    data = batch({"a": [1.0, None, 0.0]})
    out = compute_advantage_for_multi_trajectories(data, batch_keys=["a_0_0", "a_1_0", "a_2_0"],
                                                   adv_estimator=scored_grpo.ESTIMATOR, config={})
    lines = [json.loads(line) for line in (tmp_path / "grpo.jsonl").read_text().splitlines()]
    assert [(r["trained_tokens"], r["group_scored"]) for r in lines] == [(5, 2), (0, 2), (5, 2)]
    assert lines[1]["advantage"] == lines[1]["advantage_abs_max"] == 0.0
    assert lines[0]["advantage"] == pytest.approx(float(out.batch["advantages"][0, 0])) and lines[0]["advantage"] > 0


def test_what_counts_as_a_sandbox_error() -> None:
    assert scored_grpo.is_sandbox_error({"sandbox_error": 1})  # the agent loop's episode field
    assert scored_grpo.is_sandbox_error({"reward_extra_info": {"sandbox_error": 1, "score": 0.0}})  # the code reward
    assert not scored_grpo.is_sandbox_error({"reward_extra_info": {"sandbox_error": 0}, "sandbox_error": 0})
    assert not scored_grpo.is_sandbox_error({}) and not scored_grpo.is_sandbox_error(None)


@pytest.fixture
def fault_proxy(sandbox_url: str, tmp_path: Path):
    """scripts/smoke_fault_proxy.py at rate 0.25 in front of the real service."""
    port, log = free_port(), tmp_path / "fault.jsonl"
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "smoke_fault_proxy.py"), sandbox_url, str(port),
                             "0.25", str(log)])
    url = f"http://127.0.0.1:{port}"
    try:
        from coderl.client import wait_ready

        assert wait_ready(url, 60, lambda: proc.poll() is None) is None
        yield url, log
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_fault_switch_fails_a_fixed_fraction_of_scoring_requests(fault_proxy) -> None:
    from coderl.verl.reward import compute_score

    url, log = fault_proxy
    code = "```python\nprint(int(input()) + {k})\n```"
    tests = {"mode": "stdio", "cases": [{"input": "1\n", "output": "2\n"}]}

    async def main():  # one at a time: each sample its own /v1/judge request
        return [await compute_score("codecontests", code.replace("{k}", str(k)), json.dumps(tests),
                                    sandbox_url=url, retries=1) for k in range(8)]

    out = asyncio.run(main())
    # the 4th and 8th scoring requests are failed (rate 1/4), as the service fails inside (no retry):
    # each such sample is a sandbox error, never a wrong answer
    assert [o["sandbox_error"] for o in out] == [0, 0, 0, 1, 0, 0, 0, 1]
    assert [o["verdict"] for o in out] == ["wrong_answer", "accepted", "wrong_answer", "sandbox_error",
                                           "wrong_answer", "wrong_answer", "wrong_answer", "sandbox_error"]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["items"], r["faulted"]) for r in lines] == [(1, k in (3, 7)) for k in range(8)]
    # everything else passes through: the tool's route, the health probe
    run = httpx.post(url + "/v1/run", json={"language": "python", "code": "print(7)"}, timeout=60)
    assert run.status_code == 200 and run.json()["run"]["stdout"] == "7\n"
    assert run.headers["x-coderl-isolation"]  # the service's own headers too (the client reads this one)
