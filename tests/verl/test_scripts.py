"""--dry-run of every training script, as a user runs it on a CPU machine with a fresh checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.verl
ROOT = Path(__file__).resolve().parents[2]


def script(name: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(["bash", str(ROOT / "scripts" / name), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_rl_dry_run_passes_with_warnings_for_missing_files():
    done = script("run_code_rl_demo.sh", "--dry-run")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dry-run: OK (rl)" in done.stdout
    assert "model not found" in done.stderr and "train data not found" in done.stderr
    for key in ("grpo", "low_var_kl", "tool_agent", "hermes", "NaiveRewardManager", "code_reward.py:compute_score",
                "code_interpreter", "128 prompts x n=8"):
        assert key in done.stdout


def test_rl_dry_run_names_a_misspelled_key():
    done = script("run_code_rl_demo.sh", "--dry-run", "actor_rollout_ref.rollout.multi_turn.max_assistant_turnz=3")
    assert done.returncode == 1 and "max_assistant_turnz" in done.stderr


def test_rl_dry_run_rejects_the_legacy_reward_keys():
    done = script("run_code_rl_demo.sh", "--dry-run", "custom_reward_function.path=/x.py")
    assert done.returncode == 1 and "legacy key" in done.stderr


def test_strict_requires_the_files():
    done = script("run_code_rl_demo.sh", "--dry-run", "--strict")
    assert done.returncode == 1 and "model not found" in done.stderr


def test_sft_dry_run():
    done = script("run_toolcall_sft.sh", "--dry-run")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dry-run: OK (sft)" in done.stdout and "fsdp2" in done.stdout
    bad = script("run_toolcall_sft.sh", "--dry-run", "data.multiturn.enable=true")  # the seed's old key
    assert bad.returncode == 1 and "multiturn" in bad.stderr


def test_merge_dry_run_and_bad_usage(tmp_path):
    done = script("merge_checkpoint.sh", "--dry-run", str(tmp_path))
    assert done.returncode == 0 and "verl.model_merger merge --backend fsdp" in done.stdout
    assert script("merge_checkpoint.sh").returncode == 2
    assert script("run_code_rl_demo.sh", "--bogus").returncode == 2
