"""coderl's verl agent loop (`coderl_gateway_agent`) on CPU: a real harness process (the
standard-library scripted agent) talks to the real gateway; the model is verl's server-manager
seam answered from a script (verl has no CPU rollout server); the reward is the real code reward
on the real sandbox. Run through verl's own AgentLoopWorker, with the loop registered by the
agent-loop YAML (the supported, no-patch way), and on its own in a session sandbox."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.qwen_tokenizer import build_tiny_model
from tests.helpers.require import require
from tests.verl.conftest import compose

pytestmark = pytest.mark.verl
#: the folder of the scripted harness (scripted_agent.py), bound into session sandboxes
HERE = Path(__file__).resolve().parents[1] / "helpers"
TESTS = json.dumps({"mode": "stdio", "cases": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5\n", "output": "10\n"}]})
SOLUTION = "a, b = map(int, input().split())\nprint(a + b)\n"
TASK = "Write solution.py: read two integers from stdin and print their sum."


@pytest.fixture(scope="module")
def tiny_model():
    return build_tiny_model()


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def char_ids(tokenizer, text: str) -> list[int]:
    from tests.gateway.test_gateway import char_ids as chars

    return chars(tokenizer, text)


class ScriptedServer:
    """verl's LLMServerClient seam: each request id (= gateway session) gets the script in order,
    sampled by weights version ``VERSION`` (verl's rollout servers stamp each output so)."""

    VERSION = 7

    def __init__(self, tokenizer, script: list[list[int]]) -> None:
        self.script = script
        self.cursor: dict[str, int] = {}
        self.calls: list[tuple[str, list[int], list[int], dict]] = []

    async def generate(self, *, request_id, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        i = self.cursor.get(request_id, 0)
        self.cursor[request_id] = i + 1
        ids = self.script[min(i, len(self.script) - 1)]
        logprobs = [-0.5 - 0.001 * k for k in range(len(ids))]
        self.calls.append((request_id, list(prompt_ids), ids, dict(sampling_params)))
        return TokenOutput(token_ids=ids, log_probs=logprobs, stop_reason="completed",
                           extra_fields={"global_steps": self.VERSION})


def script(tokenizer, solution: str = SOLUTION) -> list[list[int]]:
    cmd = f"cat > solution.py <<'EOF'\n{solution}EOF\npython3 solution.py <<< '1 2'"
    call = json.dumps({"name": "bash", "arguments": {"cmd": cmd}})
    return [char_ids(tokenizer, f"I will write it.\n<tool_call>\n{call}\n</tool_call>"),
            char_ids(tokenizer, "solution.py is written.")]


def config(tiny_model, tmp_path, placement: str, command: str, binds: list[str]):
    loops = tmp_path / "agent_loops.yaml"
    loops.write_text(json.dumps([{"name": "coderl_gateway_agent", "_target_": "coderl.verl.agent_loop.GatewayAgentLoop",
                                  "command": command, "placement": placement, "timeout_s": 120,
                                  "harness_binds": binds}]))
    return compose([f"actor_rollout_ref.model.path={tiny_model}", "actor_rollout_ref.rollout.name=vllm",
                    "actor_rollout_ref.rollout.prompt_length=1024", "actor_rollout_ref.rollout.response_length=2048",
                    f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loops}",
                    "actor_rollout_ref.rollout.calculate_log_probs=True"])


def run_sandboxed(tiny_model, tokenizer, tmp_path, server, command: str, sampling: dict, *, score: str = "code",
                  timeout_s: float = 120, **row):
    """One `GatewayAgentLoop.run` of ``row`` on its own (not through a worker), the harness in a
    session sandbox with this folder (scripted_agent.py) bound in."""
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from coderl.verl.agent_loop import GatewayAgentLoop

    cfg = config(tiny_model, tmp_path, "sandbox", command, [str(HERE)])

    async def main():
        loop = GatewayAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer,
                                processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data),
                                hf_model_type="qwen2", tools=ToolListWrap([]), command=command, placement="sandbox",
                                timeout_s=timeout_s, harness_binds=[str(HERE)], score=score)
        return await loop.run(sampling, **row)

    return asyncio.run(main())


def check_output(out_ids, out_mask, out_logprobs, prompt_ids, server, tokenizer) -> None:
    """prompt/response ids and the mask are the gateway's record: each generation's prompt is the
    record's prefix, its sampled ids follow with mask 1 and their logprobs, the rest is mask 0."""
    full = list(prompt_ids) + list(out_ids)
    sampled = set()
    for _, prompt, ids, _ in server.calls:
        assert full[: len(prompt)] == prompt
        assert full[len(prompt): len(prompt) + len(ids)] == ids
        sampled.update(range(len(prompt) - len(prompt_ids), len(prompt) - len(prompt_ids) + len(ids)))
    assert len(out_ids) == len(out_mask) == len(out_logprobs)
    assert [i for i, m in enumerate(out_mask) if m] == sorted(sampled)
    assert all(lp == 0.0 for lp, m in zip(out_logprobs, out_mask, strict=True) if not m)
    masked_out = tokenizer.decode([t for t, m in zip(out_ids, out_mask, strict=True) if not m])
    assert "<tool_response>" in masked_out and "exit 0\n3" in masked_out  # the harness ran the tool


def test_agent_loop_worker_runs_a_harness_on_host(tiny_model, tokenizer, tmp_path):
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto

    server = ScriptedServer(tokenizer, script(tokenizer))
    cfg = config(tiny_model, tmp_path, "host", f"{sys.executable} {HERE / 'scripted_agent.py'}", [])
    batch = DataProto.from_dict(non_tensors={
        "raw_prompt": np.array([[{"role": "user", "content": TASK}]], dtype=object),
        "agent_name": np.array(["coderl_gateway_agent"], dtype=object),
        "data_source": np.array(["livecodebench"], dtype=object),
        "reward_model": np.array([{"style": "rule", "ground_truth": TESTS}], dtype=object),
        "extra_info": np.array([{"index": 0}], dtype=object),
        "index": np.array([0], dtype=object)})

    async def main():
        worker = AgentLoopWorker(cfg, llm_client=server)
        return await worker.generate_sequences(batch)

    out = asyncio.run(main())
    prompts, responses = out.batch["prompts"][0], out.batch["responses"][0]
    mask, attn = out.batch["response_mask"][0], out.batch["attention_mask"][0]
    n_prompt = int(attn[: prompts.shape[0]].sum())
    n_resp = int(attn[prompts.shape[0]:].sum())
    prompt_ids = prompts[-n_prompt:].tolist()
    check_output(responses[:n_resp].tolist(), mask[:n_resp].tolist(),
                 out.batch["rollout_log_probs"][0][:n_resp].tolist(), prompt_ids, server, tokenizer)
    assert server.calls[0][3]["temperature"] == cfg.actor_rollout_ref.rollout.temperature  # verl's, forced
    assert float(out.batch["rm_scores"][0].sum()) == 1.0  # solution.py passes the hidden tests
    extra = out.non_tensor_batch
    assert extra["agent_exit_code"][0] == 0 and extra["drifts"][0] == 0 and extra["agent_isolation"][0] == "none"
    assert extra["verdict"][0] == "accepted" and "grade_status" not in extra  # the judge scored it, no grader
    # the trainer's staleness metrics read the versions that sampled the trajectory
    assert extra["min_global_steps"][0] == extra["max_global_steps"][0] == ScriptedServer.VERSION


def test_agent_loop_in_session_sandbox(tiny_model, tokenizer, tmp_path):
    """The harness runs in a session sandbox whose only way out is the gateway's socket."""
    from coderl.sandbox import isolation

    require(isolation.bwrap_path() is not None, "bubblewrap missing (scripts/setup.sh installs it)")
    server = ScriptedServer(tokenizer, script(tokenizer))
    # besides its task, the harness tries the outside world: nothing but the gateway answers
    py = isolation.sandbox_python()
    probe = (f"{py} -c \"import socket; s=socket.socket(); s.settimeout(2); "
             "print('outside:', 'reachable' if s.connect_ex(('1.1.1.1', 80)) == 0 else 'blocked')\"")
    command = f"{probe}; {py} {HERE / 'scripted_agent.py'}"
    out = run_sandboxed(tiny_model, tokenizer, tmp_path, server, command, {"temperature": 1.0, "logprobs": True},
                        raw_prompt=[{"role": "user", "content": TASK}], data_source="livecodebench",
                        reward_model={"ground_truth": TESTS}, extra_info={"index": 0})
    assert out.extra_fields["sandbox_error"] == 0, out.extra_fields
    assert out.extra_fields["agent_isolation"] == "sandbox" and out.extra_fields["agent_exit_code"] == 0
    check_output(out.response_ids, out.response_mask, out.response_logprobs, out.prompt_ids, server, tokenizer)
    assert out.reward_score == 1.0  # solution.py came out of the sandbox as the episode's diff
    assert "outside: blocked" in out.extra_fields["agent_output_tail"]


def test_run_agent_rl_dry_run(tmp_path):
    """scripts/run_agent_rl.sh --dry-run: the agent-loop YAML is checked first (a misspelled option
    fails in one line), then verl's whole composed config (OK with warnings on a bare machine)."""
    import os
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    root = HERE.parents[1]
    bad = tmp_path / "loops.yaml"
    bad.write_text("- name: coderl_gateway_agent\n  _target_: coderl.verl.agent_loop.GatewayAgentLoop\n"
                   "  command: mini {base_url}\n  timeout: 5\n")

    def dry_run(loops: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(root / "scripts" / "run_agent_rl.sh"), "--dry-run"], capture_output=True,
                              text=True, timeout=600, env={**os.environ, "AGENT_LOOPS": loops})

    # side by side: each run is one process on one core, mostly importing verl and composing its config
    with ThreadPoolExecutor(max_workers=2) as pool:
        misspelled, done = pool.map(dry_run, (str(bad), ""))
    assert misspelled.returncode == 1 and "unknown option(s) timeout" in misspelled.stderr
    assert done.returncode == 0, done.stderr[-2000:]
    assert "agent loops:" in done.stdout and "dry-run: OK (rl)" in done.stdout
    assert "agent loop coderl_gateway_agent" in done.stdout


def gold_fix_episode(tokenizer, tmp_path) -> tuple[dict, dict, ScriptedServer]:
    """The first builtin repository task as a `coderl data swe` row (with its ``extra_info``) and a
    scripted model whose one tool call applies the task's gold patch, then says it is done."""
    import pandas as pd

    from coderl.data.swe import build_swe
    from coderl.swe.task import RepoTask

    build_swe("builtin", tmp_path / "swe", repos_dir=None, cache_dir=tmp_path / "cache")
    row = pd.read_parquet(tmp_path / "swe" / "train.parquet").iloc[0].to_dict()
    extra_info = dict(row["extra_info"])
    gold = RepoTask.from_row(json.loads(extra_info["task"])).gold_patch
    cmd = f"cat > /tmp/fix.diff <<'EOF'\n{gold}EOF\ngit apply /tmp/fix.diff && echo applied"
    call = json.dumps({"name": "bash", "arguments": {"cmd": cmd}})
    server = ScriptedServer(tokenizer, [char_ids(tokenizer, f"Applying the fix.\n<tool_call>\n{call}\n</tool_call>"),
                                        char_ids(tokenizer, "Fixed.")])
    return row, extra_info, server


def test_agent_loop_repo_task_scored_by_the_grader(tiny_model, tokenizer, tmp_path):
    """A repository task row of `coderl data swe`: the harness (in a session sandbox over the task's
    snapshot) applies the fix the model's scripted turn writes; the episode's diff is graded in a
    fresh sandbox by part 2's grader (score: repo): resolved, reward 1.0."""
    from coderl.sandbox import isolation

    row, extra_info, server = gold_fix_episode(tokenizer, tmp_path)
    command = f"{isolation.sandbox_python()} {HERE / 'scripted_agent.py'}"
    out = run_sandboxed(tiny_model, tokenizer, tmp_path, server, command, {"temperature": 1.0}, score="repo",
                        timeout_s=180, raw_prompt=list(row["prompt"]), data_source=row["data_source"],
                        reward_model=dict(row["reward_model"]), extra_info=extra_info)
    assert out.extra_fields["sandbox_error"] == 0, out.extra_fields
    assert "applied" in tokenizer.decode(out.response_ids)
    assert out.extra_fields["grade_status"] == "resolved" and out.reward_score == 1.0, out.extra_fields
    assert "verdict" not in out.extra_fields, out.extra_fields  # the judge's word, never the grader's
