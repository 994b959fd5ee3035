"""deploy/k8s: every overlay renders with real kustomize builds, every object is valid against the
Kubernetes schemas of the stated versions (kubernetes-validate) and the RayJob against KubeRay's own
CRD (kept in the repository), and the project's policy holds (tests/deploy/manifests.py). Seconds:
four renders per kubectl and schema checks, no cluster.

The service-facing values are checked against the service itself: the probes' paths are routes of
the app, the HPA's metric is a series /metrics exports, every CODERL_* variable is one the code
reads, and the Ray resource is the one the session replicas ask for."""

from __future__ import annotations

import re

import jsonschema
import kubernetes_validate
import pytest
import yaml

from coderl import __version__
from tests.deploy import manifests as m
from tests.helpers.require import require


@pytest.fixture(scope="module", autouse=True)
def _debian_kubectl() -> None:
    """Debian's kubectl is what renders; CI installs it (.ci/run), so there its absence fails."""
    require(m.debian_kubectl() is not None, "Debian's kubectl is missing: run deploy/k8s/debian_kubectl.sh (as root)")


def test_there_are_the_overlays_the_docs_name() -> None:
    assert m.OVERLAYS == ["sandbox", "sessions", "trainer-gpu", "trainer-npu"]


def test_debian_kubectl_is_the_kustomize_v2_one() -> None:
    """The oldest kustomize we support is the one Debian 12 ships (kubectl 1.20, kustomize v2.0.3):
    the overlays avoid what it lacks (directories under `resources`, `patches`, components)."""
    assert "v1.20." in m.kustomize_version(m.debian_kubectl())


@pytest.mark.parametrize("overlay", m.OVERLAYS)
def test_another_kustomize_renders_the_same_objects(overlay: str) -> None:
    """A current kubectl (kustomize 5 here) renders the same objects as Debian's kustomize v2.0.3."""
    other = m.other_kubectl()
    if other is None:
        pytest.skip("no second kubectl on PATH to compare with")
    theirs = {m.name_of(o): o for o in m.render(other, overlay)}
    ours = {m.name_of(o): o for o in m.rendered(overlay)}
    assert theirs == ours, f"{other} ({m.kustomize_version(other)}) renders {overlay} differently"


@pytest.mark.parametrize("overlay", m.OVERLAYS)
@pytest.mark.parametrize("version", m.K8S_VERSIONS)
def test_objects_are_valid_kubernetes(overlay: str, version: str) -> None:
    """Strict: a misspelt field is an error, as the API server's strict field validation makes it."""
    checked = 0
    for obj in m.rendered(overlay):
        if obj["apiVersion"].startswith("ray.io/"):
            continue  # a custom resource: KubeRay's CRD checks it (below)
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{overlay}: {m.name_of(obj)} invalid in Kubernetes {version} at "
                        f"{'/'.join(map(str, exc.path))}: {exc.message}")
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize("overlay", ["trainer-gpu", "trainer-npu"])
def test_rayjob_is_valid_against_kuberays_crd(overlay: str) -> None:
    (job,) = [o for o in m.rendered(overlay) if o["kind"] == "RayJob"]
    assert job["apiVersion"] == "ray.io/v1"
    errors = sorted(jsonschema.Draft202012Validator(m.rayjob_schema()).iter_errors(job), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors)


def test_the_crd_check_refuses_a_misspelt_field() -> None:
    """The closed schema is what makes the RayJob check worth having."""
    (job,) = [o for o in m.rendered("trainer-gpu") if o["kind"] == "RayJob"]
    bad = yaml.safe_load(yaml.safe_dump(job))
    bad["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replica"] = 2
    assert not jsonschema.Draft202012Validator(m.rayjob_schema()).is_valid(bad)


@pytest.mark.parametrize("overlay", m.OVERLAYS)
def test_policy(overlay: str) -> None:
    problems = []
    for obj in m.rendered(overlay):
        for pod in m.pod_templates(obj):
            problems += m.image_problems(pod, __version__)
            problems += m.runtime_problems(pod)
            problems += m.relaxation_problems(pod)
            problems += m.token_problems(pod) + m.host_path_problems(pod)
        if obj["kind"] == "NetworkPolicy":
            problems += m.ingress_problems(obj)
    assert not problems, "\n".join(problems)


def test_policy_catches_what_it_is_for() -> None:
    """Each rule fails on a manifest that breaks it."""
    deployment = next(o for o in m.rendered("sandbox") if o["kind"] == "Deployment")
    bad = yaml.safe_load(yaml.safe_dump(deployment))
    pod_spec = bad["spec"]["template"]["spec"]
    container = pod_spec["containers"][0]
    container["image"] = "coderl-sandbox:latest"
    del container["livenessProbe"]
    del container["resources"]["limits"]["memory"]
    container["securityContext"]["privileged"] = True  # also breaks allowPrivilegeEscalation: false
    pod_spec["hostUsers"] = True
    (pod,) = m.pod_templates(bad)
    problems = "\n".join(m.image_problems(pod, __version__) + m.runtime_problems(pod) + m.relaxation_problems(pod))
    for expected in ("not pinned", "no livenessProbe", "no memory in resources.limits",
                     "privileged without its reason", "needs hostUsers: false", "allowPrivilegeEscalation false"):
        assert expected in problems


def test_boundary_policy_catches_a_broken_manifest() -> None:
    """Each boundary rule fails on a manifest that breaks it: the session pods without the token,
    with the image cache writable, and a NetworkPolicy admitting any namespace's clients, every pod
    of monitoring, or an address block."""
    statefulset = next(o for o in m.rendered("sessions") if o["kind"] == "StatefulSet")
    bad = yaml.safe_load(yaml.safe_dump(statefulset))
    (c,) = bad["spec"]["template"]["spec"]["containers"]
    c["env"] = [e for e in c["env"] if e["name"] != "CODERL_API_TOKEN"]
    for mount in c["volumeMounts"]:
        mount.pop("readOnly", None)
    (pod,) = m.pod_templates(bad)
    problems = "\n".join(m.token_problems(pod) + m.host_path_problems(pod))
    assert "no CODERL_API_TOKEN from the Secret coderl-api-token" in problems
    assert "host path volume images mounted writable" in problems
    policy = next(o for o in m.rendered("sessions") if o["kind"] == "NetworkPolicy"
                  and o["metadata"]["name"] == "coderl-sessions")
    for breakage, expected in (
            (lambda peers: peers[0].update(namespaceSelector={}), "not a namespace AND a pod selector"),
            (lambda peers: peers[1].pop("podSelector"), "not a namespace AND a pod selector"),
            (lambda peers: peers.append({"ipBlock": {"cidr": "0.0.0.0/0"}}), "not a namespace AND a pod selector"),
            (lambda peers: peers[0]["namespaceSelector"]["matchLabels"].update(
                {"kubernetes.io/metadata.name": "default"}), "ingress from namespace")):
        broken = yaml.safe_load(yaml.safe_dump(policy))
        breakage(broken["spec"]["ingress"][0]["from"])
        assert expected in "\n".join(m.ingress_problems(broken)), expected
    open_rule = yaml.safe_load(yaml.safe_dump(policy))
    open_rule["spec"]["ingress"][0].pop("from")
    assert "admits every pod" in "\n".join(m.ingress_problems(open_rule))


def test_judging_pods_have_no_egress() -> None:
    objs = m.rendered("sandbox")
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    policies = [p for p in objs if p["kind"] == "NetworkPolicy"
                and p["spec"]["podSelector"]["matchLabels"].items() <= labels.items()]
    assert policies and all("Egress" in p["spec"]["policyTypes"] and not p["spec"].get("egress") for p in policies)


def test_session_pods_reach_only_their_gateway_and_dns() -> None:
    (policy,) = [o for o in m.rendered("sessions") if o["kind"] == "NetworkPolicy"
                 and o["metadata"]["name"] == "coderl-sessions"]
    assert "Egress" in policy["spec"]["policyTypes"]
    for rule in policy["spec"]["egress"]:
        assert rule.get("to") and rule.get("ports"), "an egress rule open to anywhere or any port"
    ports = {p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"]}
    assert ports == {18080, 53}



def test_session_pods_read_the_nodes_image_cache_and_harbor_tasks() -> None:
    """The service has no container engine and never pulls or builds at request time: it serves what
    `coderl images pull --cache DIR` (docs/deploy.md) unpacked on its node, so DIR/images is a hostPath
    mounted read-only (each image's pristine git snapshot is made in the pod's own cache) at $CODERL_CACHE/images; and
    CODERL_HARBOR_TASKS is a directory of a mounted volume. The session StatefulSet and the RayJob's
    sandbox group (where Ray places session replicas) alike."""
    statefulset = next(o for o in m.rendered("sessions") if o["kind"] == "StatefulSet")
    (job,) = [o for o in m.rendered("trainer-gpu") if o["kind"] == "RayJob"]
    (group,) = [g for g in job["spec"]["rayClusterSpec"]["workerGroupSpecs"] if g["groupName"] == "sandbox"]
    for spec in (statefulset["spec"]["template"]["spec"], group["template"]["spec"]):
        (c,) = spec["containers"]
        env = {e["name"]: e.get("value") for e in c["env"]}
        mounts = {mount["mountPath"]: mount for mount in c["volumeMounts"]}
        images = mounts[env["CODERL_CACHE"] + "/images"]
        host = {v["name"]: v for v in spec["volumes"]}[images["name"]]["hostPath"]
        assert images.get("readOnly") and host["type"] == "DirectoryOrCreate" and host["path"].endswith("/images")
        pull = f"coderl images pull --cache {host['path'].removesuffix('/images')}"
        assert pull in (m.ROOT / "docs" / "deploy.md").read_text()
        assert any(env["CODERL_HARBOR_TASKS"].startswith(path + "/") for path in mounts)


@pytest.mark.parametrize("overlay", m.OVERLAYS)
def test_selectors_and_targets_name_objects_that_exist(overlay: str) -> None:
    objs = m.rendered(overlay)
    workloads = {m.name_of(o): o for o in objs if o["kind"] in ("Deployment", "StatefulSet")}
    for obj in objs:
        if obj["kind"] == "HorizontalPodAutoscaler":
            ref = obj["spec"]["scaleTargetRef"]
            assert f"{ref['kind']}/{ref['name']}" in workloads
        selector = {"Service": lambda o: o["spec"].get("selector"),
                    "PodDisruptionBudget": lambda o: o["spec"]["selector"]["matchLabels"],
                    "NetworkPolicy": lambda o: o["spec"]["podSelector"]["matchLabels"]}.get(obj["kind"])
        if selector is None:
            continue
        wanted = selector(obj).items()
        assert any(wanted <= w["spec"]["template"]["metadata"]["labels"].items() for w in workloads.values()), \
            f"{overlay}: {m.name_of(obj)} selects no pod"
    if overlay.startswith("trainer"):
        (job,) = [o for o in objs if o["kind"] == "RayJob"]
        url = next(e["value"] for e in job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
                   ["containers"][0]["env"] if e["name"] == "SANDBOX_URL")
        service = next(o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == "coderl-sandbox")
        assert url == f"http://coderl-sandbox.{service['metadata']['namespace']}.svc:{service['spec']['ports'][0]['port']}"


def _coderl_containers(overlay: str):
    for obj in m.rendered(overlay):
        for pod in m.pod_templates(obj):
            for c in pod.spec["containers"]:
                if c["image"].startswith("coderl-sandbox"):
                    yield pod, c


def test_probes_are_routes_of_the_service_on_its_port() -> None:
    from coderl.server import native

    routes = {r.path for r in native.router.routes}
    seen = 0
    for overlay in ("sandbox", "sessions"):
        for pod, c in _coderl_containers(overlay):
            port = int(c["args"][c["args"].index("--port") + 1])
            assert c["ports"][0]["containerPort"] == port
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                get = c[probe]["httpGet"]
                assert get["path"] in routes, f"{pod.where}: {probe} {get['path']} is no route of the app"
                assert get["port"] == c["ports"][0]["name"]
            assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"  # the canary, not mere liveness
            assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"  # never the canary: busy is alive
            seen += 1
    assert seen == 3  # the judging Deployment (twice) and the session StatefulSet


def test_hpa_scales_on_a_metric_the_service_exports() -> None:
    from coderl.server.metrics import Metrics

    (hpa,) = [o for o in m.rendered("sandbox") if o["kind"] == "HorizontalPodAutoscaler"]
    names = [metric["pods"]["metric"]["name"] for metric in hpa["spec"]["metrics"]]
    assert names == ["coderl_queue_depth"]
    exported = Metrics().render().decode()
    assert re.search(r"^# TYPE coderl_queue_depth gauge$", exported, re.M)
    (rule,) = yaml.safe_load((m.K8S / "prometheus-adapter" / "rules.yaml").read_text())["rules"]
    assert rule["name"]["as"] == "coderl_queue_depth" and "coderl_queue_depth" in rule["seriesQuery"]


def test_every_coderl_variable_is_one_the_code_reads() -> None:
    source = "\n".join(p.read_text() for p in (m.ROOT / "src" / "coderl").rglob("*.py"))
    names = {e["name"] for overlay in m.OVERLAYS for _, c in _coderl_containers(overlay) for e in c.get("env", [])}
    assert {"CODERL_SLOTS", "CODERL_SESSIONS_MAX", "CODERL_SESSION_POOL"} <= names
    unknown = sorted(n for n in names if n.startswith("CODERL_") and n not in source
                     and n.removeprefix("CODERL_").lower() not in source)
    assert not unknown, f"variables nothing reads: {unknown}"


def test_sandbox_workers_advertise_the_resource_session_replicas_ask_for() -> None:
    from coderl.server.ray_sessions import SANDBOX_RESOURCE

    for overlay in ("trainer-gpu", "trainer-npu"):
        (job,) = [o for o in m.rendered(overlay) if o["kind"] == "RayJob"]
        groups = {g["groupName"]: g for g in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]}
        params = groups["sandbox"]["rayStartParams"]
        assert m.ray_resources(params).get(SANDBOX_RESOURCE, 0) > 0
        assert params["num-cpus"] == "0" and params["num-gpus"] == "0"  # verl's workers never land there
        accelerator = groups["accelerator"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert {"nvidia.com/gpu", "huawei.com/Ascend910"} & accelerator.keys()
        assert SANDBOX_RESOURCE not in m.ray_resources(groups["accelerator"]["rayStartParams"])
