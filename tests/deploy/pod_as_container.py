"""A judging pod of deploy/k8s run as a container: its securityContext, env, volumes and args
translated to the container engine's options, one by one, so the image meets the manifest's
settings without a cluster.

Only what the pod says is translated, and every field it sets must have a translation (an
unknown one fails the test instead of being dropped). `hostUsers: false` becomes an explicit
user-namespace map of 65536 ids to a high host range, as the kubelet gives a pod.
"""

from __future__ import annotations

from typing import Any

#: the host ids a pod's user namespace starts at, as the kubelet picks them (a multiple of 65536)
USERNS_BASE = 65536 * 8
#: what every Secret key a container reads stands for here (the API token: docs/deploy.md)
SECRET_VALUE = "pod-as-container-secret"

_POD_FIELDS = {"hostUsers", "automountServiceAccountToken", "enableServiceLinks", "terminationGracePeriodSeconds",
               "securityContext", "containers", "volumes",
               # where the pod is scheduled: nothing inside the container changes
               "topologySpreadConstraints", "nodeSelector", "tolerations", "affinity"}
_CONTAINER_FIELDS = {"name", "image", "args", "env", "ports", "resources", "startupProbe", "readinessProbe",
                     "livenessProbe", "securityContext", "volumeMounts"}


def container_options(pod_spec: dict[str, Any]) -> list[str]:
    """The `podman run`/`docker run` options of the pod's one container (image and args excluded)."""
    unknown = set(pod_spec) - _POD_FIELDS
    assert not unknown, f"no translation for pod fields {unknown}"
    (c,) = pod_spec["containers"]
    assert not set(c) - _CONTAINER_FIELDS, f"no translation for container fields {set(c) - _CONTAINER_FIELDS}"
    options: list[str] = []
    if pod_spec.get("hostUsers") is False:
        ids = f"0:{USERNS_BASE}:65536"
        options += ["--uidmap", ids, "--gidmap", ids]
    pod_sc, sc = pod_spec.get("securityContext", {}), c.get("securityContext", {})
    if "runAsUser" in pod_sc:
        options += ["--user", f"{pod_sc['runAsUser']}:{pod_sc.get('runAsGroup', pod_sc['runAsUser'])}"]
    for field, option in (("seccompProfile", "seccomp"), ("appArmorProfile", "apparmor")):
        kind = pod_sc.get(field, {}).get("type")
        assert kind in (None, "Unconfined", "RuntimeDefault"), f"{field} {kind}: no translation"
        if kind == "Unconfined":
            options += ["--security-opt", f"{option}=unconfined"]
    if sc.get("procMount") == "Unmasked":
        options += ["--security-opt", "systempaths=unconfined"]
    if sc.get("allowPrivilegeEscalation") is False:
        options += ["--security-opt", "no-new-privileges"]
    if sc.get("readOnlyRootFilesystem"):
        options.append("--read-only")
    assert not sc.get("privileged")
    options += [f"--cap-drop={cap}" for cap in sc.get("capabilities", {}).get("drop", [])]
    options += [f"--cap-add={cap}" for cap in sc.get("capabilities", {}).get("add", [])]
    limits = c.get("resources", {}).get("limits", {})
    if "memory" in limits:
        options += ["--memory", limits["memory"].replace("Gi", "g").replace("Mi", "m")]
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    for mount in c.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        # an emptyDir is a scratch directory; a claim's content is the cluster's data and a hostPath's
        # the node's, for which an empty directory stands in (the checks here do not read them)
        assert set(volume) - {"name"} <= {"emptyDir", "persistentVolumeClaim", "hostPath"}, f"volume {volume}: no translation"
        options += ["--tmpfs", mount["mountPath"]]
    for env in c.get("env", []):
        secret = env.get("valueFrom", {}).get("secretKeyRef")
        assert secret or "valueFrom" not in env, f"env {env}: no translation"
        options += ["-e", f"{env['name']}={SECRET_VALUE if secret else env['value']}"]
    return options
