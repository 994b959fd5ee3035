"""deploy/k8s as the checks see it: each overlay rendered by a real kustomize, its objects, their
pod templates and containers, and the project's own policy on them.

The policy is what kubectl and the schemas cannot say: every image pinned to the version the images
are built with, probes and resources on every long-running container, the service's boundary (the
API token from its Secret in every coderl container, ingress only from the trainer's namespace's
client pods and Prometheus's pods, the node's image cache read-only where episodes run), and every relaxation of a
pod's confinement (privileged, a capability added, seccomp/AppArmor unconfined, an unmasked /proc,
root, host namespaces or paths) named in the pod's ``coderl.io/security-relaxations`` annotation,
which is where the reason is written. Two API-server rules the JSON schemas cannot express are
checked too, because a manifest that breaks them renders and validates and is then refused.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = sorted(p.name for p in (K8S / "overlays").iterdir() if (p / "kustomization.yaml").exists())
RAYJOB_CRD = K8S / "schemas" / "kuberay-v1.7.0" / "ray.io_rayjobs.yaml"
RELAXATIONS = "coderl.io/security-relaxations"
#: Kubernetes versions every object must be valid in: 1.33 is the oldest with pod user namespaces
#: (hostUsers: false) on by default, 1.37 the newest kubernetes-validate 1.37.0 ships schemas for.
K8S_VERSIONS = ("1.33.0", "1.37.0")
LONG_RUNNING = {"Deployment", "StatefulSet", "DaemonSet", "RayJob"}


def debian_kubectl() -> Path | None:
    """Debian's kubectl as deploy/k8s/debian_kubectl.sh leaves it: the installed package, or the
    package unpacked beside another kubectl that owns /usr/bin/kubectl."""
    installed = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "kubernetes-client"],
                               capture_output=True, text=True, check=False)
    if "ok installed" in installed.stdout:
        return Path("/usr/bin/kubectl")
    unpacked = Path(os.environ.get("CODERL_K8S_TOOLS", "/opt/coderl/kubernetes-client")) / "usr/bin/kubectl"
    return unpacked if unpacked.exists() else None


def other_kubectl() -> Path | None:
    """A kubectl on PATH that is not Debian's (another kustomize to render with), if any."""
    found = shutil.which("kubectl")
    debian = debian_kubectl()
    if found is None or (debian is not None and Path(found).resolve() == debian.resolve()):
        return None
    return Path(found)


def kustomize_version(kubectl: Path) -> str:
    out = subprocess.run([str(kubectl), "version", "--client"], capture_output=True, text=True, check=False).stdout
    return " ".join(out.split())


def render(kubectl: Path, overlay: str) -> list[dict[str, Any]]:
    """`kubectl kustomize deploy/k8s/overlays/<overlay>`, parsed."""
    done = subprocess.run([str(kubectl), "kustomize", str(K8S / "overlays" / overlay)],
                          capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise AssertionError(f"{kubectl} kustomize {overlay} failed: {done.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@cache
def rendered(overlay: str) -> tuple[dict[str, Any], ...]:
    """The overlay as Debian's kubectl renders it (the renderer CI installs)."""
    kubectl = debian_kubectl()
    if kubectl is None:
        raise LookupError("Debian's kubectl is missing: run deploy/k8s/debian_kubectl.sh (as root)")
    return tuple(render(kubectl, overlay))


def name_of(obj: dict[str, Any]) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


@dataclass(frozen=True)
class PodTemplate:
    """One pod template of a workload: a Deployment's, or a RayJob group's."""

    where: str  # e.g. "RayJob/coderl-code-rl head"
    kind: str  # the owning object's kind
    template: dict[str, Any]

    @property
    def spec(self) -> dict[str, Any]:
        return self.template["spec"]

    @property
    def annotations(self) -> dict[str, str]:
        return self.template.get("metadata", {}).get("annotations", {})

    def containers(self) -> Iterator[dict[str, Any]]:
        yield from self.spec.get("initContainers", [])
        yield from self.spec["containers"]


def pod_templates(obj: dict[str, Any]) -> Iterator[PodTemplate]:
    kind = obj["kind"]
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        yield PodTemplate(name_of(obj), kind, obj["spec"]["template"])
    elif kind == "RayJob":
        cluster = obj["spec"]["rayClusterSpec"]
        yield PodTemplate(f"{name_of(obj)} head", kind, cluster["headGroupSpec"]["template"])
        for group in cluster.get("workerGroupSpecs", []):
            yield PodTemplate(f"{name_of(obj)} {group['groupName']}", kind, group["template"])


def image_problems(pod: PodTemplate, version: str) -> list[str]:
    """Every image pinned: a tag (or a digest), never `latest`, and the tag the images are built
    with (coderl's version: scripts/build_images.sh)."""
    problems = []
    for c in pod.containers():
        image = c["image"]
        if "@sha256:" in image:
            continue
        tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
        if tag in ("", "latest"):
            problems.append(f"{pod.where} {c['name']}: image {image!r} is not pinned to a tag")
        elif tag != version:
            problems.append(f"{pod.where} {c['name']}: image {image!r} is not coderl {version}")
    return problems


def runtime_problems(pod: PodTemplate) -> list[str]:
    """Probes and resources on every long-running container: readiness and liveness, and CPU and
    memory both requested and limited (a sandbox without a limit takes the node)."""
    if pod.kind not in LONG_RUNNING:
        return []
    problems = []
    for c in pod.spec["containers"]:
        for probe in ("readinessProbe", "livenessProbe"):
            if probe not in c:
                problems.append(f"{pod.where} {c['name']}: no {probe}")
        resources = c.get("resources", {})
        for bound in ("requests", "limits"):
            for what in ("cpu", "memory"):
                if what not in resources.get(bound, {}):
                    problems.append(f"{pod.where} {c['name']}: no {what} in resources.{bound}")
    return problems


def relaxations(pod: PodTemplate) -> set[str]:
    """The confinement this pod gives up, by the names its annotation must use."""
    found = set()
    spec = pod.spec
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            found.add(key)
    if any("hostPath" in v for v in spec.get("volumes", [])):
        found.add("hostPath")
    contexts = [spec.get("securityContext", {})] + [c.get("securityContext", {}) for c in pod.containers()]
    for sc in contexts:
        if sc.get("privileged"):
            found.add("privileged")
        if sc.get("seccompProfile", {}).get("type") == "Unconfined":
            found.add("seccompProfile=Unconfined")
        if sc.get("appArmorProfile", {}).get("type") == "Unconfined":
            found.add("appArmorProfile=Unconfined")
        if sc.get("procMount") == "Unmasked":
            found.add("procMount=Unmasked")
        if sc.get("runAsUser") == 0:
            found.add("runAsUser=0")
        for cap in sc.get("capabilities", {}).get("add", []):
            found.add(cap.removeprefix("CAP_"))
    return found


def relaxation_problems(pod: PodTemplate) -> list[str]:
    """Every relaxation named in the pod's annotation (which says why), plus the API server's own
    rules that the JSON schemas cannot express."""
    reason = pod.annotations.get(RELAXATIONS, "")
    problems = [f"{pod.where}: {what} without its reason in the {RELAXATIONS} annotation"
                for what in sorted(relaxations(pod)) if not re.search(rf"(?<![\w.]){re.escape(what)}(?!\w)", reason)]
    for c in pod.containers():
        sc = c.get("securityContext", {})
        if sc.get("procMount") == "Unmasked" and pod.spec.get("hostUsers") is not False:
            problems.append(f"{pod.where} {c['name']}: procMount Unmasked needs hostUsers: false "
                            "(the API server refuses it otherwise)")
        if sc.get("allowPrivilegeEscalation") is False and (
                sc.get("privileged") or {"SYS_ADMIN", "CAP_SYS_ADMIN"} & set(sc.get("capabilities", {}).get("add", []))):
            problems.append(f"{pod.where} {c['name']}: allowPrivilegeEscalation false with privileged or "
                            "SYS_ADMIN (the API server refuses it)")
    return problems


#: The Secret every coderl container takes the operator's API token from (docs/deploy.md, "Who may call").
TOKEN_SECRET = ("coderl-api-token", "token")
#: Who may reach the services: the trainer's namespace (the RayJob's) and Prometheus's.
INGRESS_NAMESPACES = {"coderl", "monitoring"}


def token_problems(pod: PodTemplate) -> list[str]:
    """Every long-running coderl container (the services and their clients, the trainer) has
    ``CODERL_API_TOKEN`` from the Secret: the services ask for it, the clients send it."""
    if pod.kind not in LONG_RUNNING:
        return []
    problems = []
    for c in pod.spec["containers"]:
        if not c["image"].rsplit("/", 1)[-1].startswith("coderl-"):
            continue
        env = {e["name"]: e for e in c.get("env", [])}
        ref = env.get("CODERL_API_TOKEN", {}).get("valueFrom", {}).get("secretKeyRef", {})
        if (ref.get("name"), ref.get("key")) != TOKEN_SECRET:
            problems.append(f"{pod.where} {c['name']}: no CODERL_API_TOKEN from the Secret {TOKEN_SECRET[0]} "
                            f"(key {TOKEN_SECRET[1]})")
    return problems


def host_path_problems(pod: PodTemplate) -> list[str]:
    """A node's host path (the task-image cache: the lower layers of every episode on the node) is
    mounted read-only in every container of a long-running pod; only a pre-pull step writes it."""
    if pod.kind not in LONG_RUNNING:
        return []
    host = {v["name"] for v in pod.spec.get("volumes", []) if "hostPath" in v}
    return [f"{pod.where} {c['name']}: host path volume {m['name']} mounted writable at {m['mountPath']}"
            for c in pod.spec["containers"] for m in c.get("volumeMounts", [])
            if m["name"] in host and not m.get("readOnly")]


def ingress_problems(policy: dict[str, Any]) -> list[str]:
    """Every ingress peer of a NetworkPolicy is a namespace AND pods in it (``namespaceSelector: {}``
    is every namespace; a namespace alone is every pod there), the namespace the trainer's or
    Prometheus's; no address blocks, no rule open to all."""
    where = name_of(policy)
    problems = []
    for rule in policy["spec"].get("ingress", []):
        if not rule.get("from"):
            problems.append(f"{where}: an ingress rule without 'from' admits every pod")
        for peer in rule.get("from", []):
            namespaces = peer.get("namespaceSelector", {}).get("matchLabels", {})
            pods = peer.get("podSelector", {}).get("matchLabels", {})
            if "ipBlock" in peer or not namespaces or not pods:
                problems.append(f"{where}: ingress peer {peer} is not a namespace AND a pod selector")
            elif namespaces.get("kubernetes.io/metadata.name") not in INGRESS_NAMESPACES:
                problems.append(f"{where}: ingress from namespace {namespaces} (only {sorted(INGRESS_NAMESPACES)})")
    return problems


def ray_resources(params: dict[str, str]) -> dict[str, float]:
    """A group's custom Ray resources, from rayStartParams' `resources` (KubeRay's quoted JSON)."""
    raw = params.get("resources")
    return json.loads(raw.strip().strip('"').replace('\\"', '"')) if raw else {}


def closed(schema: Any) -> Any:
    """An OpenAPI schema of a CRD as the API server applies it: a field the schema does not name is
    an error (kubectl's strict field validation), except below `x-kubernetes-preserve-unknown-fields`."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out \
            and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


@cache
def rayjob_schema() -> dict[str, Any]:
    """The `v1` RayJob schema of KubeRay's CRD kept in deploy/k8s/schemas (SOURCE.md there), closed."""
    crd = yaml.load(RAYJOB_CRD.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # 1.4 MB: libyaml
    assert crd["spec"]["names"]["kind"] == "RayJob"
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1" and v["served"]]
    return closed(v1["schema"]["openAPIV3Schema"])
