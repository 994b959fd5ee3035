"""A real SWE-bench Lite instance (pallets__flask-4992) in a SWE-bench-shaped image built here with podman
(FROM the local Python base: /testbed = the repository at the base commit from the offline bundle, its
pinned test requirements installed in the image): graded from the pristine image with the image's own
Python and pytest (gold resolves, no change does not), and an UNMODIFIED mini-swe-agent (the stock
harness, /opt/mini-swe-agent) driving an episode in the image through the verl agent loop and the
gateway, scored by the image grader. The model's turns are scripted (a random model cannot drive a
harness); the harness, the image session, the relay, the diff and the grading are real."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from tests.helpers.images import SWE_LITE, swe_bench_image

from coderl.sandbox.session import SessionHost
from coderl.swe.grade_status import GradeStatus
from coderl.swe.image_grader import ImageRepoGrader
from coderl.swe.task import RepoTask

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
INSTANCE = "pallets__flask-4992"
# the issue in one line: the test config's prompt budget (1024 tokens) holds mini's own prompts and this
SHORT_TASK = "Add a text=True parameter to flask.Config.from_file so it can open files in binary mode (tomllib)."
VENV = os.environ.get("MINI_SWE_AGENT_VENV", "/opt/mini-swe-agent")
FIX = ("python3 - <<'EOF'\np = 'src/flask/config.py'\ns = open(p).read()\n"
       "s = s.replace('        silent: bool = False,\\n    ) -> bool:', "
       "'        silent: bool = False,\\n        text: bool = True,\\n    ) -> bool:', 1)\n"
       "s = s.replace('with open(filename) as f:', 'with open(filename, \"r\" if text else \"rb\") as f:', 1)\n"
       "open(p, 'w').write(s)\nEOF\ngrep -n 'text: bool' src/flask/config.py")


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> str:
    return swe_bench_image(INSTANCE, tmp_path_factory.mktemp("ctx"))


@pytest.fixture(scope="module")
def task() -> RepoTask:
    rows = json.loads((SWE_LITE / "rows.json").read_text())
    return RepoTask.from_row(next(r for r in rows if r["instance_id"] == INSTANCE))


def test_gold_resolves_and_no_change_does_not(image, task, tmp_path):
    async def main():
        async with SessionHost() as host:
            grader = ImageRepoGrader(host, tmp_path)
            return await grader.grade(task, image, task.gold_patch), await grader.grade(task, image, "")

    gold, empty = asyncio.run(main())
    assert gold.status == GradeStatus.RESOLVED and gold.reward == 1.0, gold
    assert set(gold.pass_to_pass.values()) == {"PASSED"} and len(gold.pass_to_pass) == 18, gold
    assert empty.status == GradeStatus.UNRESOLVED and empty.reward == 0.0, empty
    assert empty.fail_to_pass == {"tests/test_config.py::test_config_from_file_toml": "FAILED"}, empty


@pytest.mark.verl
@pytest.mark.skipif(not Path(VENV, "bin", "mini").exists(), reason=f"mini-swe-agent is not installed at {VENV}: "
                                                                    "run scripts/install_mini_swe_agent.sh")
def test_stock_harness_episode_in_the_image(image, task, tmp_path):
    from tests.agent.test_agent_loop import ScriptedServer, char_ids, config
    from tests.agent.test_agent_loop_mini import COMMAND, ENV
    from tests.helpers.qwen_tokenizer import build_tiny_model
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from coderl.verl.agent_loop import GatewayAgentLoop

    tiny = build_tiny_model()
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    fix = {"name": "bash", "arguments": {"command": FIX}}
    submit = {"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}
    server = ScriptedServer(tokenizer, [
        char_ids(tokenizer, f"I will add the text parameter.\n<tool_call>\n{json.dumps(fix)}\n</tool_call>"),
        char_ids(tokenizer, f"Done. Submitting.\n<tool_call>\n{json.dumps(submit)}\n</tool_call>")])
    command = COMMAND.format(venv=VENV)
    cfg = config(tiny, tmp_path, "sandbox", command, [VENV])
    extra_info = {"index": 0, "instance_id": INSTANCE, "task": json.dumps(task.to_row()), "image": image,
                  "cache_dir": str(tmp_path / "cache")}

    async def main():
        loop = GatewayAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer,
                                processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data),
                                hf_model_type="qwen2", tools=ToolListWrap([]), command=command, placement="sandbox",
                                timeout_s=240, harness_binds=[VENV], env=ENV, score="repo")
        return await loop.run({"temperature": 1.0, "logprobs": True},
                              raw_prompt=[{"role": "user", "content": SHORT_TASK}],
                              data_source="coderl/swe", reward_model={"ground_truth": INSTANCE}, extra_info=extra_info)

    out = asyncio.run(main())
    extra = out.extra_fields
    assert extra["sandbox_error"] == 0 and extra["agent_isolation"] == "sandbox", extra
    assert extra["agent_turns"] == 2 and extra["grade_status"] == "resolved", extra.get("agent_output_tail")
    assert out.reward_score == 1.0, extra
