"""`coderl data swe-sft`: SFT rows recorded from real gold episodes, the stock mini-swe-agent (the
agent-loop YAML's harness, unmodified) in a session sandbox, its model calls through coderl's real
gateway to a script that applies the gold patch. The rows are checked against the gateway's own
token record through verl's own SFT dataset (`MultiTurnSFTDataset`, on CPU): the SFT render of a
row is the record's ids (plus the newline the template puts after the last turn), and every token
the gateway marks as sampled is a token SFT trains on. Needs MINI_SWE_AGENT_VENV (skipped, naming
it, without; failed under CODERL_TEST_ALL=1), like tests/verl/test_agent_loop_mini.py."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coderl.cache import default_cache_dir
from coderl.data.common import write_parquet
from coderl.data.swe import prompt_of
from coderl.data.swe_gold_turns import EDIT, SUBMIT, gold_turns
from coderl.data.swe_sft import (
    DEFAULT_AGENT_LOOPS,
    GoldEpisode,
    GoldRecorder,
    Harness,
    file_fixes,
    record_gold_episodes,
)
from coderl.sandbox import isolation
from coderl.swe.store import RepoStore
from coderl.swe.task_set import build_task_set
from tests.helpers.qwen_tokenizer import build_tiny_model
from tests.helpers.require import needs

VENV = os.environ.get("MINI_SWE_AGENT_VENV", "/opt/mini-swe-agent")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coderl.cli", "data", "swe-sft", *args], capture_output=True,
                          text=True, env={**os.environ, "CODERL_NO_PROGRESS": "1"})


def _commands(raw_turns: list[str]) -> list[str]:
    return [json.loads(t.split("<tool_call>\n", 1)[1].split("\n</tool_call>", 1)[0])["arguments"]["command"]
            for t in raw_turns]


@pytest.fixture(scope="module")
def task_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe")
    store = RepoStore(root / "repos", root / "cache")
    return store, [(t, store.snapshot(t.repo, t.base_commit)) for t in build_task_set(root)]


def test_every_variant_edits_every_task_into_its_fix(task_set, tmp_path):
    """Each way of editing (heredoc, sed, Python replace) run by bash on a copy of each task's base
    tree gives exactly the gold patch's files (the episodes themselves run in the sandbox below)."""
    for task, snapshot in task_set[1]:
        fixes = file_fixes(snapshot, task.gold_patch)
        assert fixes, task.instance_id
        for variant in range(len(EDIT)):
            work = tmp_path / f"{task.instance_id}-{variant}"
            shutil.copytree(snapshot, work)
            commands = _commands(gold_turns(fixes, task.fail_to_pass, variant))
            assert commands[-1] == SUBMIT
            for command in commands:
                if "pytest" not in command and command != SUBMIT:
                    done = subprocess.run(["bash", "-c", command], cwd=work, capture_output=True, text=True)
                    assert done.returncode == 0, (task.instance_id, variant, command, done.stderr)
            for fix in fixes:
                assert (work / fix.path).read_text() == fix.new, (task.instance_id, variant, EDIT[variant])


def test_bad_input_is_a_one_line_error(tmp_path):
    for args, says in ((["--tasks", "builtin", "--split", "dev"], "unknown split 'dev'"),
                       (["--tasks", "builtin", "--split", "heldout"], "held-out tasks are for evaluation only"),
                       (["--tasks", "builtin", "--agent-loops", str(tmp_path / "none.yaml")], "no such file"),
                       (["--tasks", str(tmp_path / "t.jsonl"), "--split", "train"], "--tasks builtin")):
        done = _cli(*args, "--out", str(tmp_path / "out"))
        assert done.returncode != 0 and says in done.stderr and "Traceback" not in done.stderr, done.stderr


@needs(Path(VENV, "bin", "mini").exists(),
       f"mini-swe-agent is not installed at {VENV} (MINI_SWE_AGENT_VENV): run scripts/install_mini_swe_agent.sh")
@needs(isolation.bwrap_path() is not None, "bubblewrap missing (scripts/setup.sh installs it)")
def test_gold_episode_rows_render_as_the_gateway_recorded_them(task_set, tmp_path):
    from transformers import AutoTokenizer
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    tokenizer = AutoTokenizer.from_pretrained(build_tiny_model())
    store, tasks = task_set
    task = next(t for t, _ in tasks if t.instance_id == "coderl__lru-1")
    # the task environments (pytest) are shared with the other repository tests: built once per machine
    recorder = GoldRecorder(tokenizer, Harness.from_agent_loops(DEFAULT_AGENT_LOOPS), store, default_cache_dir(),
                            timeout_s=240)
    # variant 1: nl -ba, a sed edit, the failing test run, submit (4 turns; the other edits: the test above)
    results = asyncio.run(record_gold_episodes(recorder, [(task, 1)], concurrency=1))
    assert all(isinstance(r, GoldEpisode) for r in results), [getattr(r, "detail", r) for r in results]
    write_parquet([r.row for r in results], tmp_path / "sft.parquet")
    dataset = MultiTurnSFTDataset(str(tmp_path / "sft.parquet"), tokenizer,
                                  {"max_length": 4096, "messages_key": "messages", "tools_key": "tools"})
    for i, episode in enumerate(results):
        messages = episode.row["messages"]
        # mini.yaml's own system prompt and instance template, around the task as RL rows give it
        assert messages[0] == {"role": "system", "content": "You are a helpful assistant that can interact with a "
                                                            "computer."}
        assert messages[1]["content"].startswith("Please solve this issue: " + prompt_of(task)[0]["content"])
        turns = episode.row["extra_info"]["turns"]
        assert turns == 4 and [m["role"] for m in messages[2:]] == ["assistant", "tool"] * (turns - 1) + ["assistant"]
        assert all(json.loads(m["content"])["returncode"] == 0 for m in messages if m["role"] == "tool")
        assert episode.row["tools"][0]["function"]["name"] == "bash"
        item = dataset[i]
        n = int(item["attention_mask"].sum())
        ids, mask = item["input_ids"][:n].tolist(), item["loss_mask"][:n].tolist()
        recorded = len(episode.ids)
        assert ids[:recorded] == episode.ids  # the gateway's prompts and sampled ids, token for token
        assert tokenizer.decode(ids[recorded:]) == "\n"  # the template's glue after the last turn
        assert all(m >= g for m, g in zip(mask, episode.mask, strict=False))  # every sampled token trains
        extra = [ids[k] for k in range(n) if mask[k] and not (k < recorded and episode.mask[k])]
        assert tokenizer.decode(extra).strip() == "" and len(extra) == turns
        assert episode.mask[: episode.prompt_len] == [0] * episode.prompt_len


# a second gold episode, through the CLI's own process (its imports, the task set, the environment):
# the dearest test of tests/data, so `slow` (CI runs it); the default suite records one in process above
# and checks the CLI's refusals (issue 46: the default suite under 15 minutes)
@pytest.mark.slow
@needs(Path(VENV, "bin", "mini").exists(),
       f"mini-swe-agent is not installed at {VENV} (MINI_SWE_AGENT_VENV): run scripts/install_mini_swe_agent.sh")
@needs(isolation.bwrap_path() is not None, "bubblewrap missing (scripts/setup.sh installs it)")
def test_cli_writes_train_rows_and_their_token_counts(tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "sft"
    done = _cli("--tasks", "builtin", "--limit", "1", "--variants", "1", "--val-fraction", "0",
                "--tokenizer", str(build_tiny_model()), "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "kept 1" in done.stdout and "episode_tokens: max" in done.stdout, done.stdout
    (row,) = pq.read_table(out / "train.parquet").to_pylist()
    train = {t.instance_id for t in build_task_set(tmp_path / "t", "train")}
    assert row["extra_info"]["instance_id"] in train and row["extra_info"]["turns"] == 3  # look, edit, submit
    tokens = json.loads((out / "report.json").read_text())["tokens"]
    assert tokens["episode_tokens"]["max"] == row["extra_info"]["tokens"] > tokens["first_prompt_tokens"]["max"]
