"""Agent RL records from the REAL agent loop (`coderl_gateway_agent`: a real harness process
talking to the real gateway, the model a script, as tests/agent/test_agent_loop.py runs it), and
their sample page in a real browser: the mask-1 tokens on the page are the record's, hovering a
token shows its logprob, the harness's commands, the diff and the grader's log are shown."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from coderl.cli import main
from tests.agent.test_agent_loop import HERE, TASK, TESTS, ScriptedServer, char_ids, config, script
from tests.helpers.browser import chromium, open_page
from tests.helpers.qwen_tokenizer import build_tiny_model

pytestmark = pytest.mark.verl


@pytest.fixture(scope="module")
def tiny_model():
    return build_tiny_model()


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def run_episode(tiny_model, tokenizer, tmp_path, server, *, placement: str, command: str, binds: list[str],
                score: str, row: dict):
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from coderl.agent.loop import GatewayAgentLoop

    cfg = config(tiny_model, tmp_path, placement, command, binds)

    async def go():
        loop = GatewayAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer,
                                processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data),
                                hf_model_type="qwen2", tools=ToolListWrap([]), command=command, placement=placement,
                                timeout_s=180, harness_binds=binds, score=score)
        return await loop.run({"temperature": 1.0, "logprobs": True}, global_steps=3, **row)

    return asyncio.run(go())


def records_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "3.jsonl").read_text().splitlines()]


def test_agent_record_and_its_page(tiny_model, tokenizer, tmp_path, monkeypatch):
    import sys

    from playwright.sync_api import expect

    run = tmp_path / "run"
    monkeypatch.setenv("CODERL_RECORD_DIR", str(run / "records"))
    server = ScriptedServer(tokenizer, script(tokenizer))
    row = {"raw_prompt": [{"role": "user", "content": TASK}], "data_source": "livecodebench",
           "reward_model": {"ground_truth": TESTS}, "extra_info": {"index": 5, "split": "train"}}
    out = run_episode(tiny_model, tokenizer, tmp_path, server, placement="host", score="code", binds=[],
                      command=f"{sys.executable} {HERE / 'scripted_agent.py'}", row=row)
    (record,) = records_of(run / "records")  # one record: the code score inside the loop writes none
    tokens = record["tokens"]
    assert tokens["ids"] == list(out.response_ids) and tokens["mask"] == "".join(map(str, out.response_mask))
    assert tokens["logprobs"] == [round(x, 4) for x in out.response_logprobs]
    assert record["step"] == 3 and record["group"] == "livecodebench/train/5" and record["reward"] == 1.0
    assert record["verdict"] == "accepted" and record["kind"] == "agent" and record["drifts"] == 0
    assert record["commands"][0]["name"] == "bash" and "exit 0\n3" in record["commands"][0]["output"]
    roles = [t["role"] for t in record["turns"]]  # the harness's own conversation: its system prompt first
    assert roles[:2] == ["system", "user"] and roles[2:] == ["assistant", "tool", "assistant"], roles
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
        page.screenshot(path=str(Path(os.environ.get("CODERL_VIEW_SCREENSHOTS") or tmp_path) / "view_sample_agent.png"),
                        full_page=True)
        assert errors == []


def test_repo_episode_record_has_the_diff_and_grader_log(tiny_model, tokenizer, tmp_path, monkeypatch):
    """A repository task (`coderl data swe`'s built-in set) in a session sandbox, graded by part 2's
    grader: the record holds the diff and the grader's result and log; the page colours the diff."""
    import pandas as pd
    from playwright.sync_api import expect

    from coderl.agent.repo_task import RepoTask
    from coderl.data.swe import build_swe
    from coderl.sandbox import isolation

    if isolation.bwrap_path() is None:
        pytest.skip("bubblewrap missing")
    run = tmp_path / "run"
    monkeypatch.setenv("CODERL_RECORD_DIR", str(run / "records"))
    build_swe("builtin", tmp_path / "swe", repos_dir=None, cache_dir=tmp_path / "cache")
    row = pd.read_parquet(tmp_path / "swe" / "train.parquet").iloc[0].to_dict()
    extra_info = dict(row["extra_info"])
    gold = RepoTask.from_row(json.loads(extra_info["task"])).gold_patch
    cmd = f"cat > /tmp/fix.diff <<'EOF'\n{gold}EOF\ngit apply /tmp/fix.diff && echo applied"
    call = json.dumps({"name": "bash", "arguments": {"cmd": cmd}})
    server = ScriptedServer(tokenizer, [char_ids(tokenizer, f"Applying the fix.\n<tool_call>\n{call}\n</tool_call>"),
                                        char_ids(tokenizer, "Fixed.")])
    command = f"{isolation.sandbox_python()} {HERE / 'scripted_agent.py'}"
    out = run_episode(tiny_model, tokenizer, tmp_path, server, placement="sandbox", command=command, binds=[str(HERE)],
                      score="repo", row={"raw_prompt": list(row["prompt"]), "data_source": row["data_source"],
                                         "reward_model": dict(row["reward_model"]), "extra_info": extra_info})
    assert out.extra_fields["verdict"] == "resolved", out.extra_fields
    (record,) = records_of(run / "records")
    assert record["grader"]["status"] == "resolved" and record["grader"]["log"]
    assert record["diff"].startswith("diff --git") and record["reward"] == 1.0

    assert main(["view", str(run)]) == 0
    with chromium() as browser:
        errors: list[str] = []
        page = open_page(browser, run / "view.html", errors, "#sample/0")
        expect(page.locator("#sample .diff .add").first).to_be_visible()
        assert page.locator("#sample .diff .add").count() > 0 and page.locator("#sample .diff .hunk").count() > 0
        expect(page.locator("#sample h3", has_text="Grader: resolved")).to_have_count(1)
        assert errors == []
