"""Agent RL records from the REAL agent loop (`coderl_gateway_agent`: a real harness process in a
session sandbox talking to the real gateway, the model a script, as test_agent_loop.py runs it),
and their sample page in a real browser (Debian's chromium through Playwright): the mask-1 tokens
on the page are the record's, hovering a token shows its logprob, the harness's commands, the
coloured diff and the grader's log are shown."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from coderl.cli import main
from tests.helpers.browser import chromium, open_page
from tests.helpers.require import require
from tests.verl.test_agent_loop import (
    HERE,
    TASK,
    TESTS,
    ScriptedServer,
    gold_fix_episode,
    run_sandboxed,
    script,
)

pytestmark = pytest.mark.verl


@pytest.fixture(autouse=True)
def bwrap() -> None:
    from coderl.sandbox import isolation

    require(isolation.bwrap_path() is not None, "bubblewrap missing (scripts/setup.sh installs it)")


def harness() -> str:
    from coderl.sandbox import isolation

    return f"{isolation.sandbox_python()} {HERE / 'scripted_agent.py'}"


def the_record(run: Path) -> dict:
    (line,) = (run / "records" / "3.jsonl").read_text().splitlines()  # one record: step 3, as verl said
    return json.loads(line)


def test_agent_record_and_its_page(model_dir, tokenizer, tmp_path, monkeypatch):
    from playwright.sync_api import expect

    run = tmp_path / "run"
    monkeypatch.setenv("CODERL_RECORD_DIR", str(run / "records"))
    out = run_sandboxed(model_dir, tokenizer, tmp_path, ScriptedServer(tokenizer, script(tokenizer)), harness(),
                        {"temperature": 1.0, "logprobs": True}, global_steps=3,
                        raw_prompt=[{"role": "user", "content": TASK}], data_source="livecodebench",
                        reward_model={"ground_truth": TESTS}, extra_info={"index": 5, "split": "train"})
    record = the_record(run)  # the code score inside the loop writes no second record
    tokens = record["tokens"]
    assert tokens["ids"] == list(out.response_ids) and tokens["mask"] == "".join(map(str, out.response_mask))
    assert tokens["logprobs"] == [round(x, 4) for x in out.response_logprobs]
    assert record["group"] == "livecodebench/train/5" and record["reward"] == out.reward_score == 1.0
    assert record["verdict"] == "accepted" and record["kind"] == "agent" and record["drifts"] == 0
    assert record["commands"][0]["name"] == "bash" and "exit 0\n3" in record["commands"][0]["output"]
    roles = [t["role"] for t in record["turns"]]  # the harness's own conversation: its system prompt first
    assert roles == ["system", "user", "assistant", "tool", "assistant"], roles
    assert len(tokens["turn_starts"]) == 2 and all(str(i) in tokens["pieces"] for i in tokens["ids"])

    assert main(["view", str(run)]) == 0
    with chromium() as browser:
        errors: list[str] = []
        page = open_page(browser, run / "view.html", errors, "#sample/0")
        ones = tokens["mask"].count("1")
        assert ones > 0
        expect(page.locator("#tokens .tok.m1")).to_have_count(ones)
        expect(page.locator("#m1-count")).to_have_text(str(ones))
        expect(page.locator("#tokens .tok")).to_have_count(len(tokens["ids"]))
        expect(page.locator("#tokens .turn-mark")).to_have_count(2)
        k = tokens["mask"].index("1")
        page.locator(f"#tokens .tok[data-k='{k}']").hover()
        expect(page.locator("#tip")).to_be_visible()
        expect(page.locator("#tip")).to_contain_text(f"logprob {tokens['logprobs'][k]}")
        expect(page.locator("#tip")).to_contain_text(f"id {tokens['ids'][k]}")
        assert "exit 0" in page.locator("#sample").inner_text()  # the harness command's output
        shots = Path(os.environ.get("CODERL_VIEW_SCREENSHOTS") or tmp_path)
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "view_sample_agent.png"), full_page=True)
        assert errors == []


def test_repo_episode_record_has_the_diff_and_grader_log(model_dir, tokenizer, tmp_path, monkeypatch):
    """A repository task (`coderl data swe`'s built-in set), graded by part 2's grader: the record
    holds the diff and the grader's result and log; the page colours the diff."""
    from playwright.sync_api import expect

    run = tmp_path / "run"
    monkeypatch.setenv("CODERL_RECORD_DIR", str(run / "records"))
    row, extra_info, server = gold_fix_episode(tokenizer, tmp_path)
    out = run_sandboxed(model_dir, tokenizer, tmp_path, server, harness(), {"temperature": 1.0}, score="repo",
                        timeout_s=180, global_steps=3, raw_prompt=list(row["prompt"]), data_source=row["data_source"],
                        reward_model=dict(row["reward_model"]), extra_info=extra_info)
    assert out.extra_fields["grade_status"] == "resolved", out.extra_fields
    record = the_record(run)
    assert record["grade_status"] == "resolved" and record["verdict"] == "", record["verdict"]
    assert record["grader"]["status"] == "resolved" and record["grader"]["log"]
    assert record["diff"].startswith("diff --git") and record["reward"] == 1.0

    assert main(["view", str(run)]) == 0
    with chromium() as browser:
        errors: list[str] = []
        page = open_page(browser, run / "view.html", errors, "#sample/0")
        expect(page.locator("#sample .diff .add").first).to_be_visible()
        assert page.locator("#sample .diff .hunk").count() > 0
        expect(page.locator("#sample h3", has_text="Grader: resolved")).to_have_count(1)
        assert errors == []
