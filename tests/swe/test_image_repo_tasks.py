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

import pytest

from coderl.sandbox.session import SessionHost
from coderl.swe.grade_status import GradeStatus
from coderl.swe.image_grader import ImageRepoGrader
from coderl.swe.task import RepoTask
from tests.helpers import mini_episode
from tests.helpers.images import swe_bench_image, swe_lite_task
from tests.helpers.require import needs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
INSTANCE = "pallets__flask-4992"
# the issue in one line: the test config's prompt budget (1024 tokens) holds mini's own prompts and this
SHORT_TASK = "Add a text=True parameter to flask.Config.from_file so it can open files in binary mode (tomllib)."
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
    return swe_lite_task(INSTANCE)


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


@pytest.mark.heavy  # the stock harness in the flask image: minutes, past CI's budget
@pytest.mark.verl
@needs(mini_episode.installed(), mini_episode.MISSING)
def test_stock_harness_episode_in_the_image(image, task, tmp_path):
    extra_info = {"instance_id": INSTANCE, "task": json.dumps(task.to_row()), "image": image,
                  "cache_dir": str(tmp_path / "cache")}
    out = mini_episode.run_mini_episode(tmp_path, FIX, prompt=[{"role": "user", "content": SHORT_TASK}],
                                        extra_info=extra_info, data_source="coderl/swe",
                                        reward_model={"ground_truth": INSTANCE})
    extra = out.extra_fields
    assert extra["sandbox_error"] == 0 and extra["agent_isolation"] == "sandbox", extra
    assert extra["agent_turns"] == 2 and extra["grade_status"] == "resolved", extra.get("agent_output_tail")
    assert out.reward_score == 1.0, extra
