"""`coderl export atif` over code RL records written by the real record writer (tests/helpers/view_runs.py),
its one-line answers to bad input, and the mapping's edge cases (a tool call whose arguments are not
JSON, a harness that rewrote its history). The agent records of a real episode, and harbor reading
them back, are tests/agent/test_atif_export.py."""

from __future__ import annotations

import json

import pytest

from coderl.cli import main
from coderl.records.atif import atif_trajectory
from tests.helpers.harbor_venv import HARBOR_VERSION, harbor_python, read_back
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
    python = harbor_python()
    if python is None:
        pytest.skip(f"no harbor {HARBOR_VERSION} venv (Python 3.12): `python -m tests.helpers.harbor_venv` builds it")
    write_code_run(tmp_path / "records", 6, steps=2)
    assert main(["export", "atif", str(tmp_path)]) == 0
    seen = read_back(python, [tmp_path / "atif"])
    assert len(seen) == 6 and all(s["valid"] and s["agent"] == "coderl_tool_agent" for s in seen), seen


def test_export_answers_bad_input_in_one_line(tmp_path, capsys):
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "empty").mkdir()
    write_code_run(tmp_path / "run" / "records", 2, steps=1)
    cases = [(["export", "atif", str(tmp_path / "missing")], "run directory not found"),
             (["export", "atif", str(tmp_path / "a_file")], "not a directory"),
             (["export", "atif", str(tmp_path / "empty")], "no episode exported from"),
             (["export", "atif", str(tmp_path / "run"), "--out", str(tmp_path / "a_file")], "--out is not a directory"),
             (["export", "json", str(tmp_path / "run")], "invalid choice"),
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
