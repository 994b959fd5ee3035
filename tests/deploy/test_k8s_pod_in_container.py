"""The judging pod's settings on the real image, without a cluster: the coderl-sandbox image
(scripts/build_images.sh --local-base) run with exactly the securityContext, user namespace, env and
volumes of deploy/k8s's Deployment (tests/deploy/pod_as_container.py translates them), then asked
what the pod's probes and the HPA ask: /healthz, /readyz (the canary), /metrics' queue gauge; a
program run inside bubblewrap; `coderl sandbox doctor` all ok. And each relaxation is needed:
without it the service exits 3 at once, naming it. Slow (the image build, unless tests/docker built
it already in the same run; then about two minutes, most of it doctor's languages)."""

from __future__ import annotations

import os
import subprocess

import httpx
import pytest

from tests.deploy import manifests as m
from tests.deploy.pod_as_container import SECRET_VALUE, USERNS_BASE, container_options
from tests.docker.engine import VERSION, build, container, engine, engine_env, run, wait_ready
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
        with httpx.Client(base_url=url, timeout=120, headers={"X-Coderl-Token": SECRET_VALUE}) as client:
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
    assert client.get("/v1/capabilities", headers={"X-Coderl-Token": "not-the-secret"}).status_code == 401


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


# An episode's copy-on-write layer as the session service mounts it (coderl.sandbox.overlay), inside
# the container: the edit lands in the layer, the pristine tree stays as it was, nothing stays mounted.
LAYER_CHECK = """
from pathlib import Path
from coderl.sandbox.overlay import EpisodeLayer
lower = Path('/tmp/lower'); lower.mkdir(); (lower / 'a.txt').write_text('pristine')
layer = EpisodeLayer(Path('/tmp/layers/ep1'), lower, 64)
(layer.merged / 'a.txt').write_text('edited')
print((layer.merged / 'a.txt').read_text(), (lower / 'a.txt').read_text())
layer.remove()
print(open('/proc/self/mounts').read().count('coderl-overlay'))
"""


def _sessions_pod():
    statefulset = next(o for o in m.rendered("sessions") if o["kind"] == "StatefulSet")
    spec = statefulset["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    return spec, c


@pytest.fixture(scope="module")
def sessions_pod():
    spec, c = _sessions_pod()
    build("sandbox")
    port = free_port()
    with container(f"{NAME}-sessions", *container_options(spec), "-p", f"127.0.0.1:{port}:{c['ports'][0]['containerPort']}",
                   c["image"], *c["args"]) as name:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, name, timeout=600)
        with httpx.Client(base_url=url, timeout=120, headers={"X-Coderl-Token": SECRET_VALUE}) as client:
            yield client, c, name


def test_session_pod_serves_with_its_capacity_and_warm_pool(sessions_pod):
    client, c, _ = sessions_pod
    env = {e["name"]: e.get("value") for e in c["env"]}
    stats = client.get("/v1/sessions").json()
    assert stats["capacity"] == int(env["CODERL_SESSIONS_MAX"]) and stats["pool"]["size"] == int(env["CODERL_SESSION_POOL"])
    ran = client.post("/v1/run", json={"language": "python", "code": "import os; print(os.getuid())"}).json()
    assert ran["run"]["status"] == "ok" and ran["run"]["stdout"].strip() == "65534", ran


def test_session_pod_mounts_episode_layers(sessions_pod):
    _, _, name = sessions_pod
    done = subprocess.run([engine(), "exec", "-i", name, "python3", "-"], input=LAYER_CHECK, capture_output=True,
                          text=True, timeout=300, env=engine_env())
    assert done.stdout.split() == ["edited", "pristine", "0"], done.stdout + done.stderr


@pytest.mark.parametrize("capability", ["SETFCAP", "DAC_OVERRIDE"])
def test_each_added_capability_is_needed(sessions_pod, capability):
    """Minus SETFCAP, bubblewrap started by root cannot write its uid map (the service refuses to
    start); minus DAC_OVERRIDE, the episode layer's overlay mount is refused."""
    spec, c = _sessions_pod()
    options = [o for o in container_options(spec) if o != f"--cap-add={capability}"]
    assert len(options) == len(container_options(spec)) - 1
    if capability == "SETFCAP":
        done = run(engine(), "run", "--rm", *options, c["image"], *c["args"], timeout=300)
        assert done.returncode == 3 and "setting up uid map" in done.stderr, done.stderr
    else:
        done = run(engine(), "run", "--rm", *options, "--entrypoint", "python3", c["image"], "-c", LAYER_CHECK,
                   timeout=300)
        assert done.returncode != 0 and "need CAP_SYS_ADMIN" in done.stderr, done.stdout + done.stderr
