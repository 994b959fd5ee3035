"""--dry-run of every training script, as a user runs it on a CPU machine with a fresh checkout.

Each test's script runs are separate processes that spend their time in verl's import and config
composition (one core each) or in a sandbox start waiting out its timeout (no core): the ``ran``
fixture starts the selected tests' runs side by side when the module's first test asks, and each
test asserts on its own runs' output, so the module takes about the time of its longest runs rather
than their sum."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.verl
ROOT = Path(__file__).resolve().parents[2]
RUNS: dict[str, Callable[[Path], object]] = {}  # test name -> its script runs, given a fresh directory
SIDE_BY_SIDE = 4  # two dry runs on the 2 cores CI has, beside the two sandbox starts that mostly wait


def runs_for(test: str) -> Callable[[Callable[[Path], object]], Callable[[Path], object]]:
    """Register the script runs whose output ``test`` asserts on, to be started ahead by ``ran``."""
    def register(run: Callable[[Path], object]) -> Callable[[Path], object]:
        RUNS[test] = run
        return run
    return register


@pytest.fixture(scope="module")
def ran(request, tmp_path_factory):
    """test name -> a call that waits for that test's runs and returns what they returned; only
    the tests selected in this session run (a `-k` run starts just its own)."""
    selected = {item.name for item in request.session.items if item.module is request.module}
    with ThreadPoolExecutor(max_workers=SIDE_BY_SIDE) as pool:
        started = {name: pool.submit(run, tmp_path_factory.mktemp(name)) for name, run in RUNS.items()
                   if name in selected}
        yield {name: future.result for name, future in started.items()}


def script(name: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(["bash", str(ROOT / "scripts" / name), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


@runs_for("test_rl_dry_run_passes_with_warnings_for_missing_files")
def _rl_dry_run(_: Path) -> subprocess.CompletedProcess:
    return script("run_code_rl_demo.sh", "--dry-run")


def test_rl_dry_run_passes_with_warnings_for_missing_files(ran):
    done = ran["test_rl_dry_run_passes_with_warnings_for_missing_files"]()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dry-run: OK (rl)" in done.stdout
    assert "model not found" in done.stderr and "train data not found" in done.stderr
    for key in ("grpo_scored (sampler ScoredReplayBuffer)", "low_var_kl", "tool_agent", "hermes", "NaiveRewardManager", "verl/reward.py:compute_score",
                "code_interpreter", "128 prompts x n=8"):
        assert key in done.stdout
    model = next(line for line in done.stdout.splitlines() if line.strip().startswith("model "))
    assert "checkpoints/sft/merged" in model and "a tiny stand-in model" in model, model  # configured, and who checked


@runs_for("test_rl_dry_run_names_a_misspelled_key")
def _misspelled_key(_: Path) -> subprocess.CompletedProcess:
    return script("run_code_rl_demo.sh", "--dry-run", "actor_rollout_ref.rollout.multi_turn.max_assistant_turnz=3")


def test_rl_dry_run_names_a_misspelled_key(ran):
    done = ran["test_rl_dry_run_names_a_misspelled_key"]()
    assert done.returncode == 1 and "max_assistant_turnz" in done.stderr


@runs_for("test_rl_dry_run_rejects_the_legacy_reward_keys")
def _legacy_reward_key(_: Path) -> subprocess.CompletedProcess:
    return script("run_code_rl_demo.sh", "--dry-run", "custom_reward_function.path=/x.py")


def test_rl_dry_run_rejects_the_legacy_reward_keys(ran):
    done = ran["test_rl_dry_run_rejects_the_legacy_reward_keys"]()
    assert done.returncode == 1 and "legacy key" in done.stderr


@runs_for("test_strict_requires_the_files")
def _strict(_: Path) -> subprocess.CompletedProcess:
    return script("run_code_rl_demo.sh", "--dry-run", "--strict")


def test_strict_requires_the_files(ran):
    done = ran["test_strict_requires_the_files"]()
    assert done.returncode == 1 and "model not found" in done.stderr


@runs_for("test_sft_dry_run")
def _sft_dry_runs(_: Path) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    return (script("run_toolcall_sft.sh", "--dry-run"),
            script("run_toolcall_sft.sh", "--dry-run", "data.multiturn.enable=true"))  # the seed's old key


def test_sft_dry_run(ran):
    done, bad = ran["test_sft_dry_run"]()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dry-run: OK (sft)" in done.stdout and "fsdp2" in done.stdout
    assert "a tiny stand-in model" in done.stdout
    assert bad.returncode == 1 and "multiturn" in bad.stderr


@runs_for("test_merge_dry_run_and_bad_usage")
def _merge_and_bad_usage(tmp: Path) -> tuple[subprocess.CompletedProcess, ...]:
    return (script("merge_checkpoint.sh", "--dry-run", str(tmp)), script("merge_checkpoint.sh"),
            script("run_code_rl_demo.sh", "--bogus"))


def test_merge_dry_run_and_bad_usage(ran):
    done, no_checkpoint, bogus = ran["test_merge_dry_run_and_bad_usage"]()
    assert done.returncode == 0 and "verl.model_merger merge --backend fsdp" in done.stdout
    assert no_checkpoint.returncode == 2
    assert bogus.returncode == 2


def test_tool_output_budget_fits_verls_tool_response_limit():
    """The tool cuts its output itself (keeping both ends); verl's max_tool_response_length must
    not have to cut it again."""
    import re

    import yaml

    from coderl.interpreter import render

    config = yaml.safe_load((ROOT / "tool_config" / "code_interpreter.yaml").read_text())["tools"][0]["config"]
    limit = int(re.search(r"max_tool_response_length=(\d+)", (ROOT / "scripts" / "run_code_rl_demo.sh").read_text())[1])
    worst = {"run": {"status": "runtime_error", "message": "killed by signal 11 (SIGSEGV)", "stdout": "x" * 10**5,
                     "stderr": "y" * 10**5, "exit_code": None}}
    text, _ = render(worst, config["max_output_chars"])
    assert len(text) <= limit, (len(text), limit)


@runs_for("test_rl_dry_run_names_a_misspelled_reward_option")
def _misspelled_reward_option(_: Path) -> subprocess.CompletedProcess:
    return script("run_code_rl_demo.sh", "--dry-run", "+reward.custom_reward_function.reward_kwargs.score_mod=binary")


def test_rl_dry_run_names_a_misspelled_reward_option(ran):
    done = ran["test_rl_dry_run_names_a_misspelled_reward_option"]()
    assert done.returncode == 1 and "reward_kwargs.score_mod: not an option" in done.stderr, done.stderr[-2000:]


@runs_for("test_training_refuses_without_accelerators_or_without_a_sandbox")
def _refused_runs(_: Path) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    import os

    from tests.helpers.service import refused_url

    bare = {k: v for k, v in os.environ.items() if k not in ("DEVICE", "N_GPUS")}
    no_devices = subprocess.run(["bash", str(ROOT / "scripts" / "run_toolcall_sft.sh")], capture_output=True,
                                text=True, timeout=300, env=bare)
    with refused_url() as dead:
        down = script("run_code_rl_demo.sh", env={"DEVICE": "cuda", "N_GPUS": "1", "SANDBOX_URL": dead})
    return no_devices, down


def test_training_refuses_without_accelerators_or_without_a_sandbox(ran):
    done, down = ran["test_training_refuses_without_accelerators_or_without_a_sandbox"]()
    assert done.returncode == 1 and "no cuda devices visible" in done.stderr, done.stderr[-2000:]
    assert down.returncode == 1 and "is not ready" in down.stderr, down.stderr[-2000:]


@runs_for("test_sft_dry_run_requires_the_tools_column")
def _sft_without_tools(tmp: Path) -> subprocess.CompletedProcess:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp / "sft.parquet"
    pq.write_table(pa.table({"messages": [[{"role": "user", "content": "hi"}]]}), path)
    return script("run_toolcall_sft.sh", "--dry-run", f"data.train_files={path}", f"data.val_files={path}")


def test_sft_dry_run_requires_the_tools_column(ran):
    done = ran["test_sft_dry_run_requires_the_tools_column"]()
    assert done.returncode == 1 and "missing columns ['tools']" in done.stderr, done.stderr[-2000:]


def _left_running(log_dir: Path) -> list[int]:
    """Processes a start_sandbox.sh run left behind: they carry its CODERL_LOG_DIR in their environment."""
    import os

    marker = f"CODERL_LOG_DIR={log_dir}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(int(pid))
        except OSError:
            continue
    return found


def _assert_nothing_left_running(log_dir: Path) -> None:
    from tests.helpers.poll import wait_for

    wait_for(lambda: _left_running(log_dir), lambda left: not left, timeout_s=30,
             what="the failed start's processes to end (pids still running)")
    assert not (log_dir / "sandbox-supervisor.pid").exists()


@runs_for("test_start_sandbox_reports_a_taken_port_with_the_logs_tail")
def _start_on_a_taken_port(log_dir: Path) -> tuple[subprocess.CompletedProcess, Path]:
    import socket

    (log_dir / "sandbox.log").write_text("an earlier start's line\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = script("start_sandbox.sh", env={"CODERL_PORT": str(taken.getsockname()[1]),
                                               "CODERL_LOG_DIR": str(log_dir), "CODERL_READY_TIMEOUT": "240",
                                               "CODERL_SERVICE_PIDFILE": str(log_dir / "service.pid")})
    return done, log_dir


def test_start_sandbox_reports_a_taken_port_with_the_logs_tail(ran):
    """The service cannot bind (the port is taken: it exits 3 at once, and the entrypoint gives up):
    the script says the start failed and prints this start's last log lines, the bind error among
    them, then exits 1 with nothing left running."""
    done, log_dir = ran["test_start_sandbox_reports_a_taken_port_with_the_logs_tail"]()
    assert done.returncode == 1, (done.stdout, done.stderr[-2000:])
    assert "error: sandbox failed to start" in done.stderr, done.stderr[-2000:]
    assert "address already in use" in done.stderr and "an earlier start's line" not in done.stderr, done.stderr[-2000:]
    _assert_nothing_left_running(log_dir)


@runs_for("test_start_sandbox_reports_a_bad_option_with_the_logs_tail")
def _start_with_a_bad_option(log_dir: Path) -> tuple[subprocess.CompletedProcess, Path]:
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        done = script("start_sandbox.sh", env={"CODERL_PORT": str(held.getsockname()[1]), "CODERL_SLOTS": "many",
                                               "CODERL_LOG_DIR": str(log_dir), "CODERL_READY_TIMEOUT": "20",
                                               "CODERL_SERVICE_PIDFILE": str(log_dir / "service.pid")})
    return done, log_dir


def test_start_sandbox_reports_a_bad_option_with_the_logs_tail(ran):
    """A bad setting makes every restart of the service fail the same way: once the ready timeout
    passes the script prints the service's own error from the log and stops the supervisor, which
    would otherwise restart it forever. The port is held (bound, not listening) so that nothing else
    can answer the readiness probe there."""
    done, log_dir = ran["test_start_sandbox_reports_a_bad_option_with_the_logs_tail"]()
    assert done.returncode == 1, (done.stdout, done.stderr[-2000:])
    assert "error: sandbox" in done.stderr and "CODERL_SLOTS='many' is not a number" in done.stderr, done.stderr[-2000:]
    _assert_nothing_left_running(log_dir)


def test_stamp_names_a_build_from_its_inputs(tmp_path):
    """common.sh's stamp: the same inputs find the stamp a finished build left, a changed input does
    not, and marking the new build drops the old stamp."""
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("torch==1\n")
    steps = f'''source "{ROOT}/scripts/common.sh"
        stamp_for "{tmp_path}" built "{inputs}"; [ -f "$STAMP" ] && echo "fresh: yes" || echo "fresh: no"
        stamp_done; first="$STAMP"
        stamp_for "{tmp_path}" built "{inputs}"; [ -f "$STAMP" ] && echo "fresh: yes" || echo "fresh: no"
        echo "torch==2" > "{inputs}"
        stamp_for "{tmp_path}" built "{inputs}"; [ -f "$STAMP" ] && echo "fresh: yes" || echo "fresh: no"
        stamp_done; [ -f "$first" ] && echo "old kept" || echo "old dropped"'''
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", steps], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["fresh: no", "fresh: yes", "fresh: no", "old dropped"]
    assert len(list(tmp_path.glob(".built-*"))) == 1
