"""The sandbox image built for real (scripts/build_images.sh --local-base: no registry needed) and
run the way docs/deploy.md says: health, every language through /run_code and /v1/judge, doctor
inside, a fork bomb and a memory bomb contained, and a container without the security options
refusing at once with the reason in one line."""

from __future__ import annotations

import os

import httpx
import pytest

from coderl.sandbox import languages
from tests.docker.engine import ROOT, VERSION, build, container, deploy_options, engine, run, wait_ready
from tests.helpers.service import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
IMAGE = f"coderl-sandbox:{VERSION}"
NAME = f"coderl-test-sandbox-{os.getpid()}"
LIMITS = {"cpu_s": 30, "wall_s": 60, "memory_mb": 1024}


@pytest.fixture(scope="module")
def service():
    built = build("sandbox")
    print(f"\n{IMAGE}: {built.get(IMAGE)}")
    port = free_port()
    with container(NAME, *deploy_options(), "--read-only", "--tmpfs", "/tmp", "-e", "CODERL_SLOTS=2",
                   "-p", f"127.0.0.1:{port}:8080", IMAGE, "--host", "0.0.0.0") as name:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, name)
        with httpx.Client(base_url=url, timeout=180) as client:
            yield client


def test_health_user_and_healthcheck(service):
    assert service.get("/healthz").status_code == 200
    assert service.get("/readyz").status_code == 200
    assert service.get("/v1/capabilities").json()["isolation"] == "bwrap"
    assert run(engine(), "exec", NAME, "id", "-u", check=True).stdout.strip() == "10001"
    healthcheck = run(engine(), "inspect", "--format", "{{json .Config.Healthcheck}}", NAME, check=True).stdout
    assert "healthz" in healthcheck


def test_every_language_through_run_code_and_judge(service):
    offered = set(service.get("/v1/capabilities").json()["languages"])
    assert offered == {lang.name for lang in languages.SERVED}
    failed = {}
    for lang in languages.TEST_RUNNERS:  # the runner prints its report around the test's line
        ran = service.post("/run_code", json={"language": lang.name, "code": lang.hello, "run_timeout": 60,
                                              "compile_timeout": 60}).json()
        if ran["status"] != "Success" or "hello, coderl\n" not in ran["run_result"]["stdout"]:
            failed[f"{lang.name} /run_code"] = ran
    for lang in languages.ALL:
        ran = service.post("/run_code", json={"language": lang.name, "code": lang.hello, "run_timeout": 60,
                                              "compile_timeout": 60}).json()
        if ran["status"] != "Success" or ran["run_result"]["stdout"].strip() != "hello, coderl":
            failed[f"{lang.name} /run_code"] = ran
        judged = service.post("/v1/judge", json={"submissions": [{
            "language": lang.name, "code": lang.hello, "limits": LIMITS,
            "tests": {"mode": "stdio", "cases": [{"input": "", "output": "hello, coderl\n"}]}}]}).json()
        if judged["results"][0]["verdict"] != "accepted":
            failed[f"{lang.name} /v1/judge"] = judged["results"][0]
    assert not failed, failed


def test_doctor_inside_the_container(service):
    done = run(engine(), "exec", NAME, "coderl", "sandbox", "doctor", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def _processes() -> int:
    listing = run(engine(), "exec", NAME, "python3", "-c",
                  "import os; print(sum(n.isdigit() for n in os.listdir('/proc')))", check=True)
    return int(listing.stdout)


def _still_serving(service: httpx.Client) -> None:
    assert service.get("/healthz").status_code == 200
    ran = service.post("/v1/run", json={"language": "python", "code": "print(6 * 7)"}).json()
    assert ran["run"]["status"] == "ok" and ran["run"]["stdout"].strip() == "42", ran


def test_fork_bomb_is_contained(service):
    before = _processes()
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    ran = service.post("/v1/run", json={"language": "python", "code": bomb,
                                        "limits": {"cpu_s": 5, "wall_s": 5}}).json()["run"]
    assert ran["status"] in ("time_limit", "runtime_error"), ran
    _still_serving(service)
    assert _processes() <= before + 2  # every process of the bomb is gone


def test_memory_bomb_is_contained(service):
    bomb = "chunks = []\nwhile True:\n    chunks.append(bytearray(32 << 20))\n"
    ran = service.post("/v1/run", json={"language": "python", "code": bomb,
                                        "limits": {"memory_mb": 256, "cpu_s": 10, "wall_s": 20}}).json()["run"]
    assert ran["status"] == "memory_limit", ran
    _still_serving(service)


def test_without_the_security_options_it_refuses_in_one_line(service):
    """Started with the engine's defaults (no seccomp/systempaths relaxed), the service exits at
    once, and its last line names the options to add."""
    name = f"{NAME}-confined"
    tool = engine()
    run(tool, "rm", "-f", name)
    try:
        done = run(tool, "run", "--name", name, IMAGE, timeout=120)
    finally:
        run(tool, "rm", "-f", name)
    said = done.stderr.strip().splitlines()
    assert done.returncode == 3, done.stdout + done.stderr
    assert said and "seccomp=unconfined" in said[-1] and "systempaths=unconfined" in said[-1], said


def test_save_load_round_trip(service, tmp_path):
    """scripts/push_image.sh save | load gives back the same image, which runs (the Python base
    here: the same code path as the 2 GB images, in seconds)."""
    tool = engine()
    image = f"localhost/coderl-roundtrip:{VERSION}"
    run(tool, "tag", "localhost/coderl-base/python:3.11-bookworm", image, check=True)
    original = run(tool, "image", "inspect", "--format", "{{.Id}}", image, check=True).stdout.strip()
    archive = tmp_path / "roundtrip.tar.gz"
    script = str(ROOT / "scripts" / "push_image.sh")
    try:
        run("bash", script, "save", image, str(archive), timeout=600, check=True)
        run(tool, "rmi", image, check=True)
        loaded = run("bash", script, "load", str(archive), timeout=600, check=True).stdout.strip()
        assert loaded.endswith(f"coderl-roundtrip:{VERSION}"), loaded
        assert run(tool, "image", "inspect", "--format", "{{.Id}}", image, check=True).stdout.strip() == original
        said = run(tool, "run", "--rm", image, "python3", "-c", "print('round trip')", check=True).stdout
        assert said.strip() == "round trip"
    finally:
        run(tool, "rmi", "-f", image)
