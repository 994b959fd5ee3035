"""Episode records exported as Harbor trajectories (ATIF, `coderl export atif`), from a REAL episode:
the agent loop (`coderl_gateway_agent`) runs the scripted harness in a session sandbox against the
real gateway, the code reward scores it, and the record it writes is exported by the real command.
Harbor's own code then reads the files back (its pydantic Trajectory model, its validator, its
usage reader and its trace export), in a Python 3.12 venv of its own (tests/helpers/harbor_venv.py):
skipped where that venv is not built, built by the first test that needs it under CODERL_TEST_ALL=1 (CI). The same run exported as a Harbor
job (``--layout harbor``) is read back by harbor's viewer app and job/trial models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coderl.cli import main
from tests.helpers.harbor_venv import HARBOR_VERSION, harbor_for_tests, read_back, read_back_job
from tests.helpers.require import require
from tests.records.test_agent_records import harness, the_record
from tests.verl.test_agent_loop import TASK, TESTS, ScriptedServer, run_sandboxed, script

pytestmark = pytest.mark.verl


@pytest.fixture(scope="module")
def exported(model_dir, tokenizer, tmp_path_factory) -> tuple[dict, dict, Path]:
    """One real episode's record, its ATIF file and where that is."""
    from coderl.sandbox import isolation

    require(isolation.bwrap_path() is not None, "bubblewrap missing (scripts/setup.sh installs it)")
    tmp = tmp_path_factory.mktemp("atif")
    run = tmp / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CODERL_RECORD_DIR", str(run / "records"))
        out = run_sandboxed(model_dir, tokenizer, tmp, ScriptedServer(tokenizer, script(tokenizer)), harness(),
                            {"temperature": 1.0, "logprobs": True}, global_steps=3,
                            raw_prompt=[{"role": "user", "content": TASK}], data_source="livecodebench",
                            reward_model={"ground_truth": TESTS}, extra_info={"index": 5, "split": "train"})
    assert out.reward_score == 1.0
    assert main(["export", "atif", str(run)]) == 0
    path = run / "atif" / "train" / "3" / "0.json"  # <split>/<step>/<n>.json
    return the_record(run), json.loads(path.read_text()), path


def test_episode_record_as_atif(exported, model_dir):
    record, atif, _ = exported
    steps = atif["steps"]
    assert atif["schema_version"] == "ATIF-v1.7" and atif["session_id"] == record["session_id"]
    assert atif["agent"]["name"] == "coderl_gateway_agent" and atif["agent"]["model_name"] == str(model_dir)
    assert atif["agent"]["tool_definitions"][0]["function"]["name"] == "bash"
    # the harness's conversation: system, user, then two agent turns; the tool message is the first
    # agent step's observation, answering its call by id
    assert [s["source"] for s in steps] == ["system", "user", "agent", "agent"]
    assert [s["step_id"] for s in steps] == [1, 2, 3, 4]
    (call,) = steps[2]["tool_calls"]
    assert call["function_name"] == "bash" and "solution.py" in call["arguments"]["cmd"]
    (result,) = steps[2]["observation"]["results"]
    assert result["source_call_id"] == call["tool_call_id"] and "exit 0\n3" in result["content"]
    assert steps[3]["message"] == "solution.py is written." and "tool_calls" not in steps[3]
    # token for token: each agent step's sampled ids and logprobs are the record's, its prompt is the
    # record's prompt plus the response before it
    tokens = record["tokens"]
    for step, start, length in zip(steps[2:], tokens["turn_starts"], tokens["turn_lengths"], strict=True):
        m = step["metrics"]
        assert m["completion_token_ids"] == tokens["ids"][start:start + length] and m["completion_tokens"] == length
        assert m["logprobs"] == tokens["logprobs"][start:start + length]
        assert m["prompt_token_ids"] == tokens["prompt_ids"] + tokens["ids"][:start]
        assert m["prompt_tokens"] == tokens["prompt_len"] + start and m["extra"]["trained_tokens"] == length
    assert atif["final_metrics"]["total_completion_tokens"] == tokens["mask"].count("1")
    assert atif["final_metrics"]["total_steps"] == 4
    times = [s["timestamp"] for s in steps]
    assert all(times) and times == sorted(times)  # when each message reached the gateway / was sampled
    # what ATIF has no field for stays under extra, as the record holds it
    extra = atif["extra"]
    assert extra["reward"] == 1.0 and extra["verdict"] == "accepted" and extra["diff"].startswith("diff --git")
    assert extra["harness"]["exit_code"] == 0 and extra["tokens"]["mask"] == tokens["mask"]
    assert "pieces" not in extra["tokens"] and "ids" not in extra["tokens"]


@pytest.fixture(scope="module")
def harbor_job(exported) -> tuple[dict, Path]:
    """The same real episode exported as a Harbor job: its record and the trial directory."""
    record, _, path = exported
    run = path.parents[3]  # RUN/atif/<split>/<step>/<n>.json
    assert main(["export", "atif", str(run), "--layout", "harbor"]) == 0
    return record, run / "harbor" / run.name / "train_3_0"


def test_episode_record_as_a_harbor_trial(exported, harbor_job, model_dir):
    record, atif, _ = exported
    _, trial = harbor_job
    result = json.loads((trial / "result.json").read_text())
    assert json.loads((trial / "agent" / "trajectory.json").read_text()) == atif  # where Harbor keeps it
    assert json.loads((trial / "verifier" / "reward.json").read_text()) == {"reward": 1.0}
    assert result["verifier_result"] == {"rewards": {"reward": 1.0}} and result["exception_info"] is None
    assert result["task_name"] == record["group"] and result["source"] == "livecodebench"
    assert result["agent_info"]["name"] == "coderl_gateway_agent"
    assert result["agent_info"]["model_info"] == {"name": str(model_dir)}
    steps = atif["steps"]  # the conversation's span at the gateway; the step file's time ends the trial
    assert result["agent_execution"] == {"started_at": steps[0]["timestamp"], "finished_at": steps[-1]["timestamp"]}
    assert result["started_at"] == steps[0]["timestamp"] and result["finished_at"] >= steps[-1]["timestamp"]
    # Harbor's rollout details: per sampled turn the ids, logprobs and prompt, as the record holds them
    tokens = record["tokens"]
    (detail,) = result["agent_result"]["rollout_details"]
    turns = list(zip(tokens["turn_starts"], tokens["turn_lengths"], strict=True))
    assert detail["completion_token_ids"] == [tokens["ids"][s:s + n] for s, n in turns]
    assert detail["logprobs"] == [tokens["logprobs"][s:s + n] for s, n in turns]
    assert detail["prompt_token_ids"] == [tokens["prompt_ids"] + tokens["ids"][:s] for s, _ in turns]
    assert result["agent_result"]["n_output_tokens"] == sum(tokens["turn_lengths"])
    assert result["agent_result"]["metadata"]["coderl"]["harness"]["exit_code"] == 0


def check_harbor_reads_the_job(python: Path, harbor_job) -> None:
    record, trial = harbor_job
    seen = read_back_job(python, trial.parents[1])
    assert seen["harbor"] == HARBOR_VERSION and seen["folder_type"] == "jobs" and seen["stats"] == seen["recomputed"]
    assert seen["api_trials"] == {"train_3_0": {"reward": 1.0, "error_type": None, "task_name": record["group"],
                                                "agent_name": "coderl_gateway_agent"}}
    got = seen["trials"]["train_3_0"]
    assert got["reward_valid"] and got["rewards"] == got["reward_file"] == got["verifier_reward"] == {"reward": 1.0}
    assert got["trajectory_valid"] and got["trajectory_steps"] == 4 and got["config_read"] and got["finished"]
    assert got["rollout_turns"] == record["tokens"]["turn_lengths"]
    assert got["tokens"][2] == sum(record["tokens"]["turn_lengths"])  # Harbor's token totals: output


def test_harbor_reads_the_job_back(harbor_job):
    check_harbor_reads_the_job(harbor_for_tests(), harbor_job)


def check_harbor_reads(python: Path, exported) -> None:
    record, _, path = exported
    (seen,) = read_back(python, [path.parent])
    assert seen["harbor"] == HARBOR_VERSION and seen["valid"] and seen["errors"] == [], seen
    assert seen["sources"] == ["system", "user", "agent", "agent"] and seen["tool_calls"] == ["bash"]
    assert seen["observations"] == [record["turns"][3]["tool_call_id"]]
    assert seen["completion_token_ids"] == record["tokens"]["turn_lengths"]
    (usage,) = seen["usage"].values()  # harbor's per-model token usage, from our metrics
    assert usage["n_output_tokens"] == sum(record["tokens"]["turn_lengths"])
    assert seen["conversations"] == [3, 5]  # harbor's trace export: one SFT row per agent step
    assert seen["reward"] == 1.0


def test_harbor_reads_the_export_back(exported):
    check_harbor_reads(harbor_for_tests(), exported)
