"""The whole appliance pipeline, trained for real on CPU (scripts/smoke_pipeline.sh): tool-call SFT,
merge, GRPO with the code_interpreter tool in our sandbox, LiveCodeBench eval, figures. Asserts what
the run did, from its own files, not that the scripts exited 0."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.smoke_runs import read_report, run_pipeline

# Slow: run by .ci/run (CODERL_TEST_ALL=1). The pipeline builds its own environment on first use
# (SMOKE_VENV, default .smoke-venv: 4.2 GB, about 3 min from nothing here), then trains for real.
pytestmark = [pytest.mark.slow, pytest.mark.verl]


# The fault switch on: during RL a loopback proxy fails this fraction of the reward's sandbox requests,
# so the same run also shows a sandbox error training nothing (scripts/smoke_fault_proxy.py). Cost:
# each faulted sample is answered at once, so the run is no longer (3 of 16 samples here).
FAULT_RATE = 0.2


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh run of the pipeline; CODERL_SMOKE_RUN=DIR checks a finished run (made with the switch) instead."""
    if os.environ.get("CODERL_SMOKE_RUN"):
        return Path(os.environ["CODERL_SMOKE_RUN"])
    return run_pipeline("smoke_pipeline.sh", tmp_path_factory.mktemp("smoke"),
                        {"CODERL_PORT": "", "SMOKE_FAULT_RATE": str(FAULT_RATE)})


@pytest.fixture(scope="module")
def report(run: Path) -> dict:
    return read_report(run)


@pytest.mark.timeout(5700)  # the run (run_pipeline: 5400 s), beside the rest of CI (scripts/test.sh)
def test_rl_ran_the_tool_in_the_sandbox_and_learned_from_varied_rewards(run: Path, report: dict) -> None:
    assert report["rl_steps"] == [1, 2]
    # the tool executed in our sandbox during RL: the service counted /v1/run calls, and the reward
    # saw tool calls in the responses it judged
    runs = sum(v for route, v in report["sandbox_requests_during_rl"].items() if "run" in route)
    assert runs > 0, report["sandbox_requests_during_rl"]
    assert report["samples_with_tool_call"] > 0.5
    # rewards differ inside at least one GRPO group, so the policy gradient is not zero
    assert len(report["distinct_scores"]) > 1
    assert report["groups_with_reward_variance"][0] >= 1
    # a step whose two groups happen to score uniformly has a zero gradient, legitimately (~1 run in 10)
    assert max(report["grad_norm"]) > 0, report["grad_norm"]
    assert report["max_weight_change_sft_to_rl"] > 0


@pytest.mark.timeout(60)
def test_a_sandbox_error_trained_nothing_and_was_counted(run: Path, report: dict) -> None:
    """The fault switch's failures, through the whole RL stage: each is the reward's sandbox error
    (never a wrong answer), verl's step metric counts exactly those, and in what the trainer
    computed (the GRPO records) each has a zero mask and a zero advantage and is out of its group."""
    fault = report["fault"]
    # the proxy failed that fraction of the reward's /v1/judge requests (the n-th when floor(n * rate) steps up)
    assert fault["faulted_requests"] == int(fault["requests"] * FAULT_RATE) > 0, fault
    per_step = report["sandbox_errors_per_step"]  # the reward's own per-sample flags: [flagged, samples]
    assert sum(flagged for flagged, _ in per_step.values()) == fault["faulted_items"], (per_step, fault)
    # verl's logged metric, per step, is the rate of the samples the reward flagged
    assert report["sandbox_error_rate"] == [pytest.approx(f / n) for f, n in per_step.values()], report
    grpo = report["scored_grpo"]
    assert grpo["flagged_per_step"] == per_step and grpo["advantage_rows"] == 16, grpo
    assert grpo["flagged_groups_with_a_trained_row"] == [], grpo  # the masks verl read back were zero
    assert grpo["untrained_rows_with_advantage"] == 0 and grpo["groups_below_two_with_advantage"] == 0, grpo
    # the other verdicts are the judge's: nothing else was turned into a sandbox error
    assert report["verdicts"]["sandbox_error"] == pytest.approx(fault["faulted_items"] / report["samples"])


@pytest.mark.timeout(60)
def test_checkpoint_was_merged_loaded_and_evaluated(run: Path, report: dict) -> None:
    merged = Path(report["rl_checkpoint"]) / "huggingface_merged"
    assert (merged / "config.json").is_file()
    assert sorted(report["pass_at_1"]) == ["0", "2"]
    # the eval ran multi-turn with the tool, as training does, and the tuned model solved something
    assert min(report["eval_tool_calls_per_sample"].values()) > 0.5, report["eval_tool_calls_per_sample"]
    assert max(report["pass_at_1"].values()) > 0, report["pass_at_1"]
    samples = [json.loads(line) for line in (run / "eval" / "step_2" / "samples.jsonl").read_text().splitlines()]
    # one record per sample: 4 problems x N=4, each judged in the sandbox
    assert len({(s["question_id"], s["sample"]) for s in samples}) == 16


@pytest.mark.timeout(60)
def test_figures_are_drawn_from_this_run(run: Path, report: dict) -> None:
    for name in ("training_progress.png", "evaluation_progress.png"):
        figure = run / "figures" / name
        assert figure.stat().st_size > 10_000
        assert figure.stat().st_mtime >= (run / "rl" / "metrics.jsonl").stat().st_mtime


@pytest.mark.timeout(120)
def test_view_of_the_run_opens(run: Path, report: dict) -> None:
    """`coderl view` (the pipeline's view stage) on the run's records: every RL sample is on the
    page, nothing skipped, no console error, and a sample page shows its sandbox runs."""
    from playwright.sync_api import expect

    from coderl.view.reader import read_run
    from tests.helpers.browser import chromium, open_page

    records = read_run(run).samples  # in the page's order
    assert len([r for r in records if r["split"] == "train"]) == 16  # 2 steps x 2 prompts x 4 samples
    with_tools = next(i for i, r in enumerate(records) if r["tool_runs"])
    with chromium() as browser:
        errors: list[str] = []
        page = open_page(browser, run / "view.html", errors)
        expect(page.locator("#summary")).to_have_text(f"{len(records)} samples, 0 skipped")
        expect(page.locator("#overview .plot")).to_have_count(6)  # with the reward-hack signals plot
        page.goto((run / "view.html").resolve().as_uri() + f"#sample/{with_tools}")
        expect(page.locator("#sample h3", has_text="Sandbox runs")).to_have_count(1)
        assert errors == []
