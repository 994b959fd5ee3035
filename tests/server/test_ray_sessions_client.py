"""`ReplicaSessions`, the trainer's side of a replica list, on real services (no Ray needed): a
session opens on the next replica in turn, past one whose node is gone (refused) or full (429),
and then talks to the replica that opened it; no replica able to open is one `ServiceUnavailable`
naming each. Bad placement input is a one-line `BadRequest`."""

from __future__ import annotations

import asyncio
import os
from unittest import mock

import pytest

from coderl.errors import BadRequest, ServiceUnavailable
from coderl.sandbox.session import SessionLimits
from coderl.server.ray_sessions import Placement, ReplicaSessions
from tests.helpers.service import refused_url, running_service

LIMITS = SessionLimits(episode_s=120, exec_s=30, memory_mb=256, max_processes=32, disk_mb=32, tmp_mb=32)


def test_sessions_open_past_a_lost_and_a_full_replica_and_stay_on_theirs(tmp_path):
    with mock.patch.dict(os.environ, {"CODERL_SESSIONS_MAX": "1", "CODERL_SESSION_DIR": str(tmp_path / "a")}), \
            running_service(slots=1) as full, \
            mock.patch.dict(os.environ, {"CODERL_SESSIONS_MAX": "8", "CODERL_SESSION_DIR": str(tmp_path / "b")}), \
            running_service(slots=1) as roomy, refused_url() as lost:

        async def main() -> None:
            sessions = ReplicaSessions([full, lost, roomy], timeout_s=60)
            try:
                first = await sessions.open(limits=LIMITS)  # on `full`, which is full from now on
                second = await sessions.open(limits=LIMITS)  # `lost` refuses: on `roomy`
                third = await sessions.open(limits=LIMITS)  # `roomy` in turn
                fourth = await sessions.open(limits=LIMITS)  # `full` answers 429, `lost` refuses
                placed = [sessions.replica_of[s.id] for s in (first, second, third, fourth)]
                assert placed == [full, roomy, roomy, roomy], placed
                for s in (first, second, third, fourth):  # each call reaches the replica holding it
                    r = await s.exec(f"echo {s.id}")
                    assert r.stdout == f"{s.id}\n", r
                    await s.close()
            finally:
                await sessions.aclose()

        asyncio.run(main())


def test_no_replica_able_to_open_names_each():
    with refused_url() as one, refused_url() as two:
        async def main() -> None:
            async with ReplicaSessions([one, two]) as sessions:
                with pytest.raises(ServiceUnavailable, match="no session replica opened a session") as caught:
                    await sessions.open(limits=LIMITS)
                assert one in str(caught.value) and two in str(caught.value)

        asyncio.run(main())


@pytest.mark.parametrize("kwargs, message", [
    ({"replicas": 0}, "must be positive"),
    ({"replicas": 1, "episodes_per_replica": 0}, "must be positive"),
    ({"replicas": 1, "port_base": 65530, "ports": 16}, "port range 65530..65545 is not valid"),
])
def test_bad_placement_is_one_line(kwargs, message):
    with pytest.raises(BadRequest, match=message):
        Placement(**kwargs)


def test_no_replica_urls_is_one_line():
    with pytest.raises(BadRequest, match="no session replica URLs given"):
        ReplicaSessions([])


@pytest.mark.verl
def test_the_agent_loop_takes_a_replica_list(tokenizer, tmp_path):
    """verl's `GatewayAgentLoop` with ``sessions_url`` a list (a lost replica first, then a real
    service): the episode opens past the lost one, runs there and is graded resolved (the grade
    request spread over the same list)."""
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from coderl.sandbox import isolation
    from coderl.verl.agent_loop import GatewayAgentLoop
    from tests.helpers.qwen_tokenizer import build_tiny_model
    from tests.verl.test_agent_loop import HERE, config, gold_fix_episode

    row, extra_info, server = gold_fix_episode(tokenizer, tmp_path)
    command = f"{isolation.sandbox_python()} {HERE / 'scripted_agent.py'}"
    cfg = config(build_tiny_model(), tmp_path, "sandbox", command, [])
    service_env = {"CODERL_SWE_REPOS": extra_info["repos_dir"], "CODERL_SESSION_BINDS": str(HERE),
                   "CODERL_SESSION_DIR": str(tmp_path / "sessions")}
    with mock.patch.dict(os.environ, service_env), running_service(slots=1) as url, refused_url() as lost:
        async def main():
            loop = GatewayAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer,
                                    processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data),
                                    hf_model_type="qwen2", tools=ToolListWrap([]), command=command, timeout_s=180,
                                    score="repo", sessions_url=f"{lost},{url}")
            return await loop.run({"temperature": 1.0}, raw_prompt=list(row["prompt"]),
                                  data_source=row["data_source"], reward_model=dict(row["reward_model"]),
                                  extra_info=extra_info)

        out = asyncio.run(main())
    assert out.extra_fields["sandbox_error"] == 0, out.extra_fields
    assert out.extra_fields["grade_status"] == "resolved" and out.reward_score == 1.0, out.extra_fields
