"""The training image's layers (docker/Dockerfile.cuda, shared with the Ascend file through
docker/trainer_layers.sh) built on a torch CPU base and run: the entrypoint starts the sandbox
before the command, the training scripts' dry-runs pass against the image's own verl, `stop`
reaches the command, and the container's exit code is the command's."""

from __future__ import annotations

import os
import time

import pytest

from tests.docker.engine import VERSION, build, container, deploy_options, engine, run

# Heavy (CODERL_TEST_HEAVY=1): building this image from nothing is the largest single cost CI had (612 s
# at load 5, a 6.2 GB image); what CI still shows of it is listed in README.md, "Test tiers".
pytestmark = [pytest.mark.heavy, pytest.mark.timeout(3600)]
IMAGE = f"coderl-cpu:{VERSION}"
NAME = f"coderl-test-trainer-{os.getpid()}"
# A stand-in trainer: says whether the sandbox answered before it started, then runs until a
# SIGTERM, on which it exits 5 (a code no engine or shell would make up). The handler is set
# before the line the fixture waits for, so a stop after that line always meets it.
TRAINER = """
import signal, sys, time, urllib.request
signal.signal(signal.SIGTERM, lambda *a: sys.exit(5))
ready = urllib.request.urlopen('http://127.0.0.1:8080/readyz', timeout=5).status
print('sandbox before command:', ready, flush=True)
while True:
    time.sleep(1)
"""


@pytest.fixture(scope="module")
def trainer():
    built = build("cpu")
    print(f"\n{IMAGE}: {built.get(IMAGE)}")
    with container(NAME, *deploy_options(), IMAGE, "python3", "-c", TRAINER) as name:
        deadline = time.monotonic() + 300
        while "sandbox before command" not in run(engine(), "logs", name).stdout:
            assert time.monotonic() < deadline, run(engine(), "logs", name).stderr[-3000:]
            assert run(engine(), "inspect", "--format", "{{.State.Running}}", name).stdout.strip() == "true", \
                run(engine(), "logs", name).stderr[-3000:]
            time.sleep(1)
        yield name


def test_the_entrypoint_starts_the_sandbox_first(trainer):
    logs = run(engine(), "logs", trainer)
    assert "sandbox before command: 200" in logs.stdout
    assert "sandbox ready" in logs.stderr


@pytest.mark.parametrize("script", ["scripts/run_code_rl_demo.sh", "scripts/run_toolcall_sft.sh"])
def test_dry_runs_pass_against_the_images_verl(trainer, script):
    done = run(engine(), "exec", "-w", "/opt/coderl", trainer, script, "--dry-run", timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_images_own_stack(trainer):
    probe = "import torch, verl; print(torch.__version__, verl.__version__, torch.cuda.is_available())"
    said = run(engine(), "exec", trainer, "python3", "-c", probe, check=True).stdout.split()
    assert said[0].startswith("2.13.0") and said[1] == "0.9.1" and said[2] == "False", said


def test_stop_reaches_the_command_and_the_exit_code_is_its_own(trainer):
    # runs last in this module: it stops the container
    run(engine(), "stop", "-t", "60", trainer, timeout=120, check=True)
    code = run(engine(), "inspect", "--format", "{{.State.ExitCode}}", trainer, check=True).stdout.strip()
    assert code == "5", run(engine(), "logs", trainer).stderr[-3000:]
