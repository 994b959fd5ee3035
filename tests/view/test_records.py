"""The record writer (size cap, group sampling, step files, a refusing disk) and the run reader on
good and bad run directories; the `coderl view` command's answers to bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coderl.cli import main
from coderl.records.code import response_sha1, response_turns
from coderl.records.writer import RecordSettings, record_safely, write_record
from coderl.view.page import build_page
from coderl.view.reader import overview, read_run
from tests.helpers.view_runs import write_code_run


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_long_texts_are_cut_with_a_marker_and_named(tmp_path):
    settings = RecordSettings(directory=str(tmp_path), max_text=200)
    written = write_record(settings, {"index": 0, "max_global_steps": 4},
                           {"answer": "x" * 1000, "turns": [{"content": "short"}, {"content": "y" * 500}]})
    (record,) = lines(tmp_path / "5.jsonl")  # training: the weights version + 1
    assert written == len((tmp_path / "5.jsonl").read_bytes())
    assert len(record["answer"]) < 300 and "[800 characters cut]" in record["answer"]
    assert record["answer"].startswith("x" * 100) and record["answer"].endswith("x" * 100)
    assert record["turns"][0]["content"] == "short"
    assert record["truncated"] == ["answer", "turns[1].content"]
    assert record["step"] == 5 and record["split"] == "train"


def test_every_kth_group_is_kept_whole(tmp_path):
    settings = RecordSettings(directory=str(tmp_path), every=3)
    for sample in range(24):  # 6 groups of 4
        write_record(settings, {"index": sample // 4, "max_global_steps": 0}, {"n": sample})
    kept = lines(tmp_path / "1.jsonl")
    assert [r["n"] for r in kept] == [0, 1, 2, 3, 12, 13, 14, 15]  # groups 0 and 3, all 4 samples each


def test_step_given_by_the_caller_and_other_splits(tmp_path):
    settings = RecordSettings(directory=str(tmp_path))
    write_record(settings, {"index": 0}, {"n": 1}, step=7)
    write_record(settings, {"index": 0, "split": "validation", "max_global_steps": 2}, {"n": 2})
    write_record(settings, {"index": 0}, {"n": 3})
    assert lines(tmp_path / "7.jsonl")[0]["step"] == 7
    assert lines(tmp_path / "validation" / "2.jsonl")[0]["split"] == "validation"
    assert lines(tmp_path / "nostep.jsonl")[0]["step"] is None


def test_records_off_and_a_refusing_disk_never_fail_the_step(tmp_path):
    assert write_record(RecordSettings(directory=""), {}, {"n": 1}) == 0
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.warns(UserWarning, match="cannot write"):
        assert write_record(RecordSettings(directory=str(blocked / "sub")), {}, {"n": 1}) == 0

    def broken() -> dict:
        raise KeyError("odd value")

    with pytest.warns(UserWarning, match="sample not recorded: KeyError"):
        assert record_safely(RecordSettings(directory=str(tmp_path)), {}, broken) == 0


def test_settings_from_the_environment(monkeypatch):
    monkeypatch.setenv("CODERL_RECORD_DIR", "/x")
    monkeypatch.setenv("CODERL_RECORD_EVERY", "4")
    assert RecordSettings.from_env().directory == "/x" and RecordSettings.from_env().every == 4
    assert RecordSettings.from_env("").directory == ""  # explicitly off wins over the environment
    assert RecordSettings.from_env("/y", 2) == RecordSettings(directory="/y", every=2)


def test_response_turns_as_verl_decodes_them():
    """Special tokens skipped: the role lines the template leaves are dropped, tool calls parsed."""
    text = ('Try it.\n<tool_call>\n{"name": "code_interpreter", "arguments": {"code": "print(1)"}}\n</tool_call>\n'
            "user\n<tool_response>\nstatus: ok\nstdout:\n1\n</tool_response>\nassistant\nDone.\n<tool_call>\nnot json"
            "\n</tool_call>")
    turns = response_turns(text)
    assert [t["role"] for t in turns] == ["assistant", "tool", "assistant"]
    assert turns[0] == {"role": "assistant", "content": "Try it.",
                        "tool_calls": [{"name": "code_interpreter", "arguments": {"code": "print(1)"}}]}
    assert turns[1]["content"] == "status: ok\nstdout:\n1"
    assert turns[2]["content"] == "Done." and turns[2]["tool_calls"][0]["ill_formed"] is True


def test_reader_overview_of_a_generated_run(tmp_path):
    write_code_run(tmp_path / "rl" / "records", 40, group_size=4, steps=2)
    run = read_run(tmp_path)  # records one level down, as the smoke run keeps them
    assert len(run.samples) == 40 and run.skipped == [] and run.sources == ["rl/records"]
    rows = overview(run.samples)
    assert [(r["split"], r["step"], r["samples"]) for r in rows] == [("train", 1, 20), ("train", 2, 20)]
    for row in rows:
        assert sum(row["verdicts"].values()) == 20 and row["groups"] == 5
        step = [s for s in run.samples if s["step"] == row["step"]]
        assert row["sandbox_errors"] == sum(s["verdict"] == "sandbox_error" for s in step)


def test_judge_verdicts_and_grade_statuses_are_read_apart(tmp_path):
    """A code sample's verdict, an agent episode's grade status (its verdict empty), and an agent
    record written before the two were apart (the grader's status copied into ``verdict``): the
    status is a grade status, never a verdict; the accepted/resolved rate counts both."""
    (tmp_path / "records").mkdir()
    rows = [{"kind": "code", "reward": 1.0, "verdict": "accepted"},
            {"kind": "agent", "reward": 1.0, "verdict": "", "grade_status": "resolved", "grader": {"status": "resolved"}},
            {"kind": "agent", "reward": 0.0, "verdict": "tampered", "grader": {"status": "tampered"}},
            {"kind": "agent", "reward": 0.0, "verdict": "wrong_answer", "grade_status": ""}]
    (tmp_path / "records" / "1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = read_run(tmp_path)
    assert [(s["verdict"], s["grade_status"]) for s in run.samples] == [
        ("accepted", "none"), ("none", "resolved"), ("none", "tampered"), ("wrong_answer", "none")]
    (row,) = overview(run.samples)
    assert row["verdicts"] == {"accepted": 1, "none": 2, "wrong_answer": 1}
    assert row["grade_statuses"] == {"resolved": 1, "tampered": 1} and row["accepted"] == 0.5


def test_reader_lists_what_it_skips_and_why(tmp_path):
    records = tmp_path / "records"
    (records / "validation").mkdir(parents=True)
    (records / "1.jsonl").write_text(json.dumps({"reward": 1.0, "verdict": "accepted"}) + "\n"
                                     + '{"reward": 0.0, "verd')  # a writer killed mid-line
    (records / "2.jsonl").write_text('not json\n[1, 2]\n{"score": 0.5, "input": "g/train/1"}\n')
    (records / "notes.txt").write_text("hello")
    (records / "validation" / "3.jsonl").write_text('{"reward": 0}\n')
    (records / "validation" / "deeper").mkdir()
    run = read_run(tmp_path)
    reasons = {(s["path"], s.get("line")): s["reason"] for s in run.skipped}
    assert reasons == {("records/1.jsonl", 2): "truncated last line (no newline)",
                       ("records/2.jsonl", 1): "not JSON (Expecting value)",
                       ("records/2.jsonl", 2): "not a record (a JSON list)",
                       ("records/notes.txt", None): "not a step file (<step>.jsonl or nostep.jsonl)",
                       ("records/validation/deeper", None): "a folder inside a split folder"}
    assert [(s["step"], s["split"], s["reward"], s["group"]) for s in run.samples] == [
        (1, "train", 1.0, "?"), (2, "train", 0.5, "g/train/1"), (3, "validation", 0.0, "?")]


def test_reader_falls_back_to_reward_samples_and_says_so(tmp_path):
    (tmp_path / "reward_samples").mkdir()
    (tmp_path / "reward_samples" / "1.jsonl").write_text('{"score": 1.0, "verdict": "accepted", "input": "a/train/0"}\n')
    run = read_run(tmp_path)
    assert len(run.samples) == 1 and "reward_samples" in run.skipped[0]["reason"]
    empty = read_run(tmp_path / "reward_samples")
    assert empty.samples == [] and "nothing to show" in empty.skipped[0]["reason"]


def test_page_data_cannot_break_out_of_its_script_block(tmp_path):
    (tmp_path / "records").mkdir()
    hostile = {"answer": "</script><script>alert(1)</script><!--", "group": "@@DETAILS@@"}
    (tmp_path / "records" / "1.jsonl").write_text(json.dumps(hostile) + "\n")
    page, _ = build_page(read_run(tmp_path), "t")
    assert page.count("<script") == page.count("</script>") == 4  # the page's own four blocks, nothing else
    assert "alert(1)" in page and "<!--" not in page


def test_view_command_answers_bad_arguments_in_one_line(tmp_path, capsys):
    assert main(["view", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    (tmp_path / "f").write_text("")
    assert main(["view", str(tmp_path / "f")]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["view", str(tmp_path), "--out", str(tmp_path)]) == 2
    assert "--out is a directory" in capsys.readouterr().err
    assert main(["view", str(tmp_path), "--out", str(tmp_path / "v.html")]) == 0  # nothing to show: still a page
    assert "0 samples" in capsys.readouterr().out and (tmp_path / "v.html").stat().st_size > 1000


def test_prompt_from_verls_rollout_dump_when_the_reward_had_none(tmp_path):
    """verl's v1 trainer hands the reward no prompt; the rollout dump beside the records has it,
    keyed by the response text. Two prompts with the same response at one step: left empty."""
    (tmp_path / "records").mkdir()
    (tmp_path / "rollouts").mkdir()
    rows = [("p1", "answer A"), ("p2", "answer B"), ("p3", "same"), ("p4", "same")]
    (tmp_path / "rollouts" / "1.jsonl").write_text("".join(
        json.dumps({"input": p, "output": o, "step": 1, "score": 0.0}) + "\n" for p, o in rows) + "garbage\n")
    (tmp_path / "records" / "1.jsonl").write_text("".join(
        json.dumps({"prompt": [], "response_sha1": response_sha1(o), "step": 1}) + "\n"
        for o in ("answer B", "same", "unknown")))
    run = read_run(tmp_path)
    assert [s["prompt"] for s in run.samples] == [
        [{"role": "prompt", "content": "p2", "source": "verl's rollout dump"}], [], []]
    assert run.skipped == [{"path": "rollouts/1.jsonl", "line": 5,
                            "reason": "not a rollout dump line (input, output, step)"}]


def test_agent_record_marks_where_the_final_branch_forked(tokenizer):
    """A harness that rewrote its history: the gateway forked a new branch after the first turn;
    the record's token record is the final branch's, with the fork point as a response index."""
    from coderl.gateway.core import GatewaySession, SessionConfig
    from coderl.records.agent import agent_record

    session = GatewaySession("ep", SessionConfig(), deadline=0.0)
    first = session.trajectory.current
    first.extend_context([11, 12, 13])
    first.extend_sampled([14, 15], [-0.1, -0.2], "stop")
    first.extend_context([16])
    first.extend_sampled([17, 18], [-0.3, -0.4], "stop")
    final = session.trajectory.fork([11, 12, 13, 14, 15, 19])  # history rewritten after turn 1
    final.extend_sampled([20], [-0.5], "stop")
    p = final.prompt_len
    record = agent_record({"extra_info": {"index": 0}}, session, tokenizer, response_ids=final.ids[p:],
                          mask=final.mask[p:], logprobs=final.logprobs[p:], prompt_len=p, reward=0.0, extra={})
    tokens = record["tokens"]
    assert (record["branches"], record["drifts"]) == (2, 1)
    assert tokens["fork_at"] == 2 and tokens["turn_starts"] == [0, 3]
    assert tokens["ids"] == [14, 15, 19, 20] and tokens["mask"] == "1101"
    assert set(tokens["pieces"]) == {"14", "15", "19", "20"}
