"""`coderl export atif` over code RL records written by the real record writer (tests/helpers/view_runs.py),
its one-line answers to bad input, and the mapping's edge cases (a tool call whose arguments are not
JSON, a harness that rewrote its history), and the same records as a Harbor job (``--layout harbor``)
read back by harbor's own viewer and models, a sandbox error among them. The agent records of a real
episode, and harbor reading them back, are tests/records/test_atif_export.py."""

from __future__ import annotations

import json

import pytest

from coderl.cli import main
from coderl.records.atif import atif_trajectory
from tests.helpers.harbor_venv import harbor_for_tests, read_back, read_back_job
from tests.helpers.view_runs import write_code_run


def test_code_records_export_one_file_each(tmp_path, capsys):
    write_code_run(tmp_path / "records", 12, steps=3)
    assert main(["export", "atif", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    assert "12 trajectories (ATIF-v1.7), 0 records not exported" in capsys.readouterr().out
    files = sorted((tmp_path / "out" / "train").glob("*/*.json"))
    names = {f.relative_to(tmp_path / "out").parts[2] for f in files}  # <split>/<step>/<n>.json
    assert len(files) == 12 and names == {"0.json", "1.json", "2.json", "3.json"}
    for path in files:
        atif = json.loads(path.read_text())
        steps = atif["steps"]
        assert atif["agent"]["name"] == "coderl_tool_agent" and steps[0]["source"] == "user"
        calls = [c for s in steps for c in s.get("tool_calls") or []]
        results = [r for s in steps for r in (s.get("observation") or {}).get("results") or []]
        assert [r["source_call_id"] for r in results] == [c["tool_call_id"] for c in calls]
        assert all(c["function_name"] == "code_interpreter" and "code" in c["arguments"] for c in calls)
        assert all(r["content"].startswith("status: ok") and r["extra"]["status"] == "ok" for r in results)
        assert atif["extra"]["reward"] in (0.0, 1.0) and "judge" in atif["extra"]


def test_harbor_reads_code_records_back(tmp_path):
    python = harbor_for_tests()
    write_code_run(tmp_path / "records", 6, steps=2)
    assert main(["export", "atif", str(tmp_path)]) == 0
    seen = read_back(python, [tmp_path / "atif"])
    assert len(seen) == 6 and all(s["valid"] and s["agent"] == "coderl_tool_agent" for s in seen), seen


def harbor_job_run(tmp_path):
    """8 code records over two steps (seed 7: train/2's last one a sandbox error), as a Harbor job."""
    write_code_run(tmp_path / "records", 8, steps=2, seed=7)
    assert main(["export", "atif", str(tmp_path), "--layout", "harbor", "--out", str(tmp_path / "jobs")]) == 0
    return tmp_path / "jobs" / tmp_path.name


def test_code_records_as_a_harbor_job(tmp_path, capsys):
    job = harbor_job_run(tmp_path)
    assert "8 trials (one Harbor job, ATIF-v1.7), 0 records not exported" in capsys.readouterr().out
    trials = sorted(p.name for p in job.iterdir() if p.is_dir())
    assert trials == [f"train_{step}_{n}" for step in (1, 2) for n in range(4)]  # <split>_<step>_<n>
    records = [json.loads(line) for step in (1, 2) for line in (tmp_path / "records" / f"{step}.jsonl").read_text().splitlines()]
    for name, record in zip(trials, records, strict=True):
        trial = job / name
        result = json.loads((trial / "result.json").read_text())
        assert result["trial_name"] == name and result["task_name"] == record["group"] == result["config"]["task"]["path"]
        assert result["source"] == "livecodebench" and result["agent_info"]["name"] == "coderl_tool_agent"
        assert json.loads((trial / "agent" / "trajectory.json").read_text())["steps"] == atif_trajectory(record)["steps"]
        assert (trial / "config.json").is_file() and result["finished_at"] and result["task_checksum"] == ""
        if record["verdict"] == "sandbox_error":  # ours: no reward, an exception whose policy says so
            assert result["verifier_result"] is None and not (trial / "verifier" / "reward.json").exists()
            assert result["exception_info"]["exception_type"] == "SandboxError"
            assert result["exception_info"]["policy_override"]["has_valid_reward"] is False
            assert (trial / "exception.txt").read_text().startswith("sandbox_error: ")
        else:
            assert result["verifier_result"] == {"rewards": {"reward": record["reward"]}} and not result["exception_info"]
            assert json.loads((trial / "verifier" / "reward.json").read_text()) == {"reward": record["reward"]}
        assert (trial / "verifier" / "test-stdout.txt").read_text().startswith(f"verdict: {record['verdict']}\ntest 1: ")
    assert sum(r["verdict"] == "sandbox_error" for r in records) == 1
    stats = json.loads((job / "result.json").read_text())["stats"]
    assert stats["n_completed_trials"] == 8 and stats["n_errored_trials"] == 1
    (evals,) = stats["evals"].values()
    scored = [r["reward"] for r in records if r["verdict"] != "sandbox_error"]
    assert evals["n_trials"] == 7 and evals["metrics"] == [{"mean": sum(scored) / 7}]


def test_harbor_reads_the_job_back(tmp_path):
    python = harbor_for_tests()
    job = harbor_job_run(tmp_path)
    seen = read_back_job(python, job.parent)
    assert seen["folder_type"] == "jobs" and seen["api_jobs"] == [job.name] and seen["api_job_trials"] == 8
    assert seen["stats"] == seen["recomputed"]  # our job result is what Harbor computes from our trials
    errored = "train_2_3"
    assert seen["api_trials"][errored] == {"reward": None, "error_type": "SandboxError",
                                           "task_name": "livecodebench/train/1", "agent_name": "coderl_tool_agent"}
    for name, trial in seen["trials"].items():
        assert trial["config_read"] and trial["trajectory_valid"] and trial["trajectory_errors"] == [], (name, trial)
        assert trial["finished"] and trial["trial_name"] == name
        if name == errored:  # never a 0: Harbor's own policy says the reward is not valid
            assert not trial["reward_valid"] and not trial["api_reward_valid"] and trial["rewards"] is None
            assert trial["policy"] == [{"should_retry": True, "should_grade": False, "has_valid_reward": False}]
        else:
            assert trial["reward_valid"] and trial["rewards"] == trial["reward_file"] == trial["verifier_reward"]
            assert seen["api_trials"][name]["reward"] == trial["rewards"]["reward"]
    # the per-task table: train/1's mean is over its 3 scored trials, the sandbox error an error
    rewards = [seen["trials"][f"train_2_{n}"]["rewards"]["reward"] for n in range(3)]
    assert seen["api_tasks"]["livecodebench/train/1"] == {"n_trials": 4, "n_errors": 1, "avg_reward": sum(rewards) / 3}


def test_export_answers_bad_input_in_one_line(tmp_path, capsys):
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "empty").mkdir()
    write_code_run(tmp_path / "run" / "records", 2, steps=1)
    cases = [(["export", "atif", str(tmp_path / "missing")], "run directory not found"),
             (["export", "atif", str(tmp_path / "a_file")], "not a directory"),
             (["export", "atif", str(tmp_path / "empty")], "no episode exported from"),
             (["export", "atif", str(tmp_path / "run"), "--out", str(tmp_path / "a_file")], "--out is not a directory"),
             (["export", "json", str(tmp_path / "run")], "invalid choice"),
             (["export", "atif", str(tmp_path / "run"), "--layout", "jobs"], "invalid choice"),
             (["export", "atif", str(tmp_path / "empty"), "--layout", "harbor"], "no episode exported from"),
             (["export", "atif", str(tmp_path / "run"), "--layout", "harbor", "--out", str(tmp_path / "a_file")],
              "--out is not a directory"),
             (["export"], "required")]
    for argv, message in cases:
        assert exit_code(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (argv, err)


def exit_code(argv: list[str]) -> int:
    """What `coderl ARGV` exits with: main's return, or argparse's exit for a bad option."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_arguments_that_are_not_json_are_kept_whole():
    record = {"kind": "agent", "turns": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "bash", "arguments": "ls -la"}]},
        {"role": "tool", "content": "total 0", "tool_call_id": "c1"}], "tokens": {}}
    (call,) = atif_trajectory(record)["steps"][1]["tool_calls"]
    assert call["arguments"] == {} and call["extra"] == {"raw_arguments": "ls -la", "ill_formed": True}


def test_turns_that_do_not_pair_with_the_token_record_get_no_ids():
    """A harness that rewrote an assistant turn: the final branch sampled one turn but the
    conversation shows two assistant messages; no step gets ids that may not be its own."""
    record = {"kind": "agent", "turns": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "a"},
                                         {"role": "user", "content": "again"}, {"role": "assistant", "content": "b"}],
              "tokens": {"prompt_len": 3, "prompt_ids": [1, 2, 3], "ids": [7, 8], "mask": "11",
                         "logprobs": [-0.1, -0.2], "turn_starts": [0], "turn_lengths": [2]}}
    atif = atif_trajectory(record)
    assert all("metrics" not in s for s in atif["steps"])
    assert "1 sampled turns in the final branch, 2 assistant messages" in atif["notes"]


def test_not_an_episode_is_refused():
    with pytest.raises(ValueError, match="no messages"):
        atif_trajectory({"kind": "agent", "turns": [], "prompt": []})
    with pytest.raises(ValueError, match="not an episode"):
        atif_trajectory({"kind": "sft"})
