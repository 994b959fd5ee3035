"""Agentic RL, the whole loop, trained for real on CPU (scripts/smoke_agent_pipeline.sh): SFT on mini's
gold trajectories, merge, GRPO over coderl_gateway_agent with the stock mini-swe-agent in session
sandboxes and verl's own vLLM rollout server behind the gateway, the repository grader as the
reward, held-out eval before and after, figures, the view. Asserts what the run did, from its own
files, not that the scripts exited 0."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.require import needs
from tests.helpers.smoke_runs import read_report, run_pipeline

MINI = Path(os.environ.get("MINI_SWE_AGENT_VENV", "/opt/mini-swe-agent"))
# The fault switch: the step over the sandbox service (RUN/remote-step) goes through a proxy that fails
# this fraction of its grading requests.
FAULT_RATE = 0.2
# Slow: run by .ci/run (CODERL_TEST_ALL=1). Shares the code smoke run's environment (.smoke-venv).
pytestmark = [pytest.mark.slow, pytest.mark.verl,
              needs((MINI / "bin" / "mini").exists(),
                    f"mini-swe-agent is not installed at {MINI} (MINI_SWE_AGENT_VENV): run scripts/install_mini_swe_agent.sh")]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh run of the pipeline; CODERL_AGENT_SMOKE_RUN=DIR checks a finished run instead (the
    README's figures and screenshots come from one)."""
    if os.environ.get("CODERL_AGENT_SMOKE_RUN"):
        return Path(os.environ["CODERL_AGENT_SMOKE_RUN"])
    return run_pipeline("smoke_agent_pipeline.sh", tmp_path_factory.mktemp("agent-smoke"),
                        {"MINI_SWE_AGENT_VENV": str(MINI)})


@pytest.fixture(scope="module")
def report(run: Path) -> dict:
    return read_report(run)


@pytest.mark.timeout(3300)
def test_grpo_over_the_gateway_learned_from_varied_rewards(run: Path, report: dict) -> None:
    steps = report["steps"]
    assert report["rl_steps"] == [1, 2, 3] and sorted(steps) == ["1", "2", "3"], report["rl_steps"]
    assert all(s["episodes"] == 8 for s in steps.values()), {k: s["episodes"] for k, s in steps.items()}
    # the stock mini drove the episodes: it called the model, ran commands, and the grader scored diffs
    assert all(s["turns_per_episode"] >= 1 for s in steps.values())
    assert any(s["outcomes"].get("resolved") for s in steps.values()), {k: s["outcomes"] for k, s in steps.items()}
    # rewards differ inside at least one GRPO group, there was a gradient, and the weights moved
    assert sum(s["groups_with_reward_variance"][0] for s in steps.values()) >= 1
    assert max(report["grad_norm"]) > 0, report["grad_norm"]
    assert report["max_weight_change_sft_to_rl"] > 0


@pytest.mark.timeout(60)
def test_every_trained_token_was_sampled_and_its_logprob_agrees(run: Path, report: dict) -> None:
    for step, s in report["steps"].items():
        assert s["mask_problems"] == [], (step, s["mask_problems"])
        assert s["trained_tokens_per_episode"] > 0
        # the stock harness rewrites its history only where it drops a response it could not parse
        # (mini's format error): one drift and one more branch each, none otherwise
        assert s["drifts_unexplained"] == 0 and s["drifts"] == s["format_errors"], (step, s["drifts"], s["format_errors"])
        assert s["branches"] == s["episodes"] + s["drifts"], (step, s["branches"], s["drifts"])
        # a sandbox error is masked (nothing trains on it), never a wrong answer
        assert s["sandbox_error_episodes_masked"], step
        # the gateway's rollout logprobs against the actor's weights of that step, token by token
        diff = s["recomputed_logprob_abs_diff"]
        assert diff["tokens"] > 0 and diff["max"] < 1e-2, (step, diff)
    # verl's own rollout-vs-actor metric (probabilities) for the same tokens
    assert all(d is not None and d < 1e-2 for d in report["rollout_actor_prob_diff_max"]), report["rollout_actor_prob_diff_max"]


@pytest.mark.timeout(60)
def test_heldout_eval_ran_the_harness_before_and_after(run: Path, report: dict) -> None:
    for name in ("sft", "rl"):
        held = report["heldout"][name]
        assert held["tasks"] >= 2 and held["sandbox_errors"] == 0, (name, held)
        results = [json.loads(line) for line in (run / "eval" / name / "results.jsonl").read_text().splitlines()]
        assert len(results) == held["tasks"] and all("agent_exit_code" in r for r in results), results
    merged = Path(report["rl_checkpoint"]) / "huggingface_merged"
    assert (merged / "config.json").is_file()


@pytest.mark.timeout(60)
def test_figures_are_drawn_from_this_run(run: Path, report: dict) -> None:
    for name in ("agent_progress.png", "training_progress.png"):
        figure = run / "figures" / name
        assert figure.stat().st_size > 10_000
        assert figure.stat().st_mtime >= (run / "rl" / "metrics.jsonl").stat().st_mtime


@pytest.mark.timeout(120)
def test_view_of_the_run_opens(run: Path, report: dict) -> None:
    """`coderl view` on the run's episode records: every episode on the page, nothing skipped, no
    console error, and an episode's page shows its tokens with as many mask-1 tokens as its record."""
    from playwright.sync_api import expect

    from coderl.view.reader import read_run
    from tests.helpers.browser import chromium, open_page

    records = read_run(run).samples
    assert len([r for r in records if r["split"] == "train"]) == 24  # 3 steps x 8 episodes (one task)
    trained = next(i for i, r in enumerate(records) if "1" in (r.get("tokens") or {}).get("mask", ""))
    with chromium() as browser:
        errors: list[str] = []
        page = open_page(browser, run / "view.html", errors)
        expect(page.locator("#summary")).to_have_text(f"{len(records)} samples, 0 skipped")
        shots = Path(os.environ.get("CODERL_VIEW_SCREENSHOTS") or run)
        page.screenshot(path=str(shots / "view_agent_smoke_overview.png"), full_page=True)
        page.goto((run / "view.html").resolve().as_uri() + f"#sample/{trained}")
        ones = records[trained]["tokens"]["mask"].count("1")
        expect(page.locator("#tokens .tok.m1")).to_have_count(ones)
        expect(page.locator("#m1-count")).to_have_text(str(ones))
        page.screenshot(path=str(shots / "view_agent_smoke_sample.png"), full_page=True)
        assert errors == []


@pytest.fixture(scope="module")
def remote(run: Path) -> dict:
    """One GRPO step with the sessions remote (scripts/smoke_agent_remote_step.sh), from this run's
    SFT model, into RUN/remote-step, the fault switch on: run here, or read from a checked run
    (CODERL_AGENT_SMOKE_RUN) made with SMOKE_FAULT_RATE. Heavy: about 4 min at CI's load, and CI shows
    each part elsewhere (README, "Test tiers")."""
    out = run / "remote-step"
    if not (out / "report.json").is_file():
        run_pipeline("smoke_agent_remote_step.sh", out, {"MINI_SWE_AGENT_VENV": str(MINI),
                                                         "SMOKE_FAULT_RATE": str(FAULT_RATE)},
                     args=(str(run / "sft" / "merged"),))
    return read_report(out)


@pytest.mark.heavy
@pytest.mark.timeout(1500)
def test_a_grpo_step_with_the_sessions_remote(remote: dict) -> None:
    """Issue 28's check: every episode's sandbox opened, driven and graded by a `coderl serve` session
    service over HTTP (its own counters say so), the harness's model calls relayed back to the loop's
    gateway (a sandbox has no network: turns exist only through the relay), and the step trained."""
    assert remote["rl_steps"] == [1], remote["rl_steps"]
    (step,) = remote["steps"].values()
    episodes = step["episodes"]
    fault = remote["fault"]  # the proxy failed the n-th grading request when floor(n * rate) stepped up
    assert episodes == 8 and fault["requests"] == episodes and fault["faulted_requests"] == int(8 * FAULT_RATE), fault
    assert step["turns_per_episode"] >= 1 and step["mask_problems"] == [], step
    served = remote["service_requests"]
    for route in ("/v1/sessions", "/v1/sessions/{sid}/finish", "/v1/sessions/{sid}"):
        assert served.get(route) == episodes, (route, served)  # opened, diff taken, closed: each once
    # graded by the service, except the ones the proxy failed in front of it
    assert served.get("/v1/swe/grade") == episodes - fault["faulted_requests"], served
    assert served.get("/v1/sessions/{sid}/exec", 0) >= episodes, served  # the harness itself
    assert remote["grad_norm"][0] is not None, remote["grad_norm"]  # the step trained (0 when all scored alike)


@pytest.mark.heavy
@pytest.mark.timeout(60)
def test_a_failed_grading_trained_nothing_and_was_counted(remote: dict) -> None:
    """The faulted episodes of that step: each a sandbox error (never a wrong answer) with its whole
    response masked, verl's step metric counts exactly those, and in what the trainer computed (the
    GRPO records) each is out of its group's statistics with a zero advantage."""
    (step,) = remote["steps"].values()
    faulted = remote["fault"]["faulted_items"]
    assert step["sandbox_errors"] == faulted > 0 and step["sandbox_error_episodes_masked"], step
    assert remote["sandbox_error_rate"] == [pytest.approx(faulted / step["episodes"])], remote["sandbox_error_rate"]
    grpo = remote["scored_grpo"]
    assert grpo["flagged_per_step"] == {"1": [faulted, step["episodes"]]}, grpo
    assert grpo["flagged_groups_with_a_trained_row"] == [] and grpo["untrained_rows_with_advantage"] == 0, grpo
    assert grpo["groups_below_two_with_advantage"] == 0, grpo
