"""What a newcomer reads first: `coderl --help`, a mistyped option, the scripts' --help, the
judge's per-test lines and a data builder's error, each as one clear message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def coderl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coderl.cli", *args], capture_output=True, text=True, timeout=300)


def test_top_level_help_speaks_to_users():
    out = coderl("--help").stdout
    assert "register" not in out and "contributes" not in out and "COMMAND --help" in out


@pytest.mark.parametrize("args, prog", [
    (("eval", "lcb", "--problems", "p", "--out", "o", "--bogus", "1"), "coderl eval lcb"),
    (("data", "lcb", "--source", "s", "--out", "o", "--nope"), "coderl data lcb"),
    (("serve", "--nope"), "coderl serve"),
])
def test_unknown_option_points_to_the_subcommands_help(args, prog):
    done = coderl(*args)
    assert done.returncode == 2 and f"see {prog} --help" in done.stderr and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("script", ["eval_livecodebench.sh", "run_code_rl_demo.sh", "run_toolcall_sft.sh",
                                    "merge_checkpoint.sh"])
def test_script_help_is_its_header_without_code(script):
    done = subprocess.run(["bash", str(ROOT / "scripts" / script), "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip()
    assert "set -euo" not in done.stdout and not any(line.startswith("#") for line in done.stdout.splitlines())


def test_judge_explains_skipped_tests(tmp_path):
    program = tmp_path / "p.py"
    program.write_text("print(3)\n")
    tests = tmp_path / "t.json"
    tests.write_text(json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["4\n", "5\n"]}))
    done = coderl("judge", str(program), "--tests", str(tests))
    assert done.returncode == 1 and "test 2: skipped" in done.stdout and "--run-all" in done.stdout, done.stdout


def test_missing_source_is_one_line_without_a_progress_bar(tmp_path):
    done = coderl("data", "rl", "--source", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "rows" not in done.stderr, done.stderr


@pytest.mark.parametrize("env", [{"SMOKE_AGENT_ROWS": "none.jsonl"}, {"SMOKE_AGENT_REPOS": "."}])
def test_the_agent_smoke_run_refuses_half_a_task_set_in_one_line(tmp_path, env):
    """Its task-set switch (SMOKE_AGENT_ROWS + SMOKE_AGENT_REPOS) needs both, checked before any stage."""
    done = subprocess.run(["bash", str(ROOT / "scripts" / "smoke_agent_pipeline.sh"), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "SMOKE_AGENT_REPOS" in done.stderr, done.stderr
    assert not (tmp_path / "run").exists()


def test_the_agent_smoke_run_starts_at_a_stage_only_after_the_earlier_ones_finished(tmp_path):
    """SMOKE_FROM=rl keeps a run's data, SFT and merge: it refuses, in one line and deleting nothing,
    a run whose stages.tsv does not list them all; an unknown stage likewise."""
    run = tmp_path / "run"
    (run / "sft").mkdir(parents=True)
    (run / "sft" / "kept").write_text("")
    (run / "stages.tsv").write_text("env\t1\ndata\t132\nsft\t2519\n")
    for stage, says in (("rl", "needs stage merge_sft finished"), ("eval", "must be sft, merge_sft or rl")):
        done = subprocess.run(["bash", str(ROOT / "scripts" / "smoke_agent_pipeline.sh"), str(run)],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SMOKE_FROM": stage})
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert (run / "sft" / "kept").exists() and (run / "stages.tsv").read_text().count("\n") == 3
