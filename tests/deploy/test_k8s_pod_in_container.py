"""The judging pod's settings on the real image, without a cluster: the coderl-sandbox image
(scripts/build_images.sh --local-base) run with exactly the securityContext, user namespace, env and
volumes of deploy/k8s's Deployment (tests/deploy/pod_as_container.py translates them), then asked
what the pod's probes and the HPA ask: /healthz, /readyz (the canary), /metrics' queue gauge; a
program run inside bubblewrap; `coderl sandbox doctor` all ok. And each relaxation is needed:
without it the service exits 3 at once, naming it. Slow (the image build, unless tests/docker built
it already in the same run; then about two minutes, most of it doctor's languages)."""

from __future__ import annotations

import os

import httpx
import pytest

from tests.deploy import manifests as m
from tests.deploy.pod_as_container import USERNS_BASE, container_options
from tests.docker.engine import VERSION, build, container, engine, run, wait_ready
from tests.helpers.service import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
NAME = f"coderl-test-k8s-pod-{os.getpid()}"


@pytest.fixture(scope="module")
def pod():
    if m.debian_kubectl() is None:
        pytest.fail("Debian's kubectl is missing: run deploy/k8s/debian_kubectl.sh (as root)")
    deployment = next(o for o in m.rendered("sandbox") if o["kind"] == "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    assert c["image"] == f"coderl-sandbox:{VERSION}"
    build("sandbox")  # cached layers when tests/docker built it already
    port = free_port()
    with container(NAME, *container_options(spec), "-p", f"127.0.0.1:{port}:{c['ports'][0]['containerPort']}",
                   c["image"], *c["args"]) as name:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, name)
        with httpx.Client(base_url=url, timeout=120) as client:
            yield client, c


def test_probes_and_metric_answer(pod):
    client, c = pod
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert client.get(c[probe]["httpGet"]["path"]).status_code == 200
    assert "coderl_queue_depth " in client.get("/metrics").text
    assert client.get("/v1/capabilities").json()["slots"] == int(
        next(e["value"] for e in c["env"] if e["name"] == "CODERL_SLOTS"))


def test_programs_run_isolated_in_the_pods_settings(pod):
    client, _ = pod
    ran = client.post("/v1/run", json={"language": "python", "code": "print(6 * 7)"}).json()
    assert ran["run"]["status"] == "ok" and ran["run"]["stdout"].strip() == "42", ran
    assert client.get("/v1/capabilities").json()["isolation"] == "bwrap"


def test_the_service_runs_as_the_pods_user_in_its_own_user_namespace(pod):
    ids = run(engine(), "exec", NAME, "sh", "-c", "id -u; cat /proc/self/uid_map", check=True).stdout.split()
    assert ids[0] == "10001"
    assert ids[1:4] == ["0", str(USERNS_BASE), "65536"]  # hostUsers: false


def test_doctor_in_the_pods_settings(pod):
    done = run(engine(), "exec", NAME, "coderl", "sandbox", "doctor", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    print(done.stdout)


@pytest.mark.parametrize("relaxation", ["seccomp=unconfined", "systempaths=unconfined"])
def test_each_relaxation_is_needed(pod, relaxation):
    """The pod minus one relaxation: refused at start, with the reason (a CrashLoopBackOff whose log
    says what to give, never a half-working sandbox)."""
    _, c = pod
    spec = next(o for o in m.rendered("sandbox") if o["kind"] == "Deployment")["spec"]["template"]["spec"]
    options = container_options(spec)
    at = options.index(relaxation)
    del options[at - 1:at + 1]
    done = run(engine(), "run", "--rm", *options, c["image"], *c["args"], timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "bubblewrap cannot build the sandbox" in done.stderr and relaxation.split("=")[0] in done.stderr
