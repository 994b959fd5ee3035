"""The sandbox's pinned runtime environment: the packages programs may import (numpy, pandas,
sortedcontainers, ... for Python; lodash for Node), built outside the sandbox by
``scripts/build_runtime.sh`` from the pinned lists in ``docker/`` and bound read-only into every
slot. It is a venv of its own, so the service's virtualenv (its packages, its secrets) never is.

Where it is: ``CODERL_RUNTIME_PREFIX``, else ``/opt/coderl/runtime`` (what ``scripts/setup.sh`` and
the image build). It is bound at the same path inside, so it should name nothing of the host's
(``/opt/coderl/runtime`` and not a path in a home or a checkout, which a program would then see).
Without one the sandbox runs the bare base interpreter.
"""

from __future__ import annotations

import functools
import json
import os
from importlib import metadata
from pathlib import Path

DEFAULT_PREFIX = "/opt/coderl/runtime"


@functools.cache
def runtime_prefix() -> str | None:
    """The runtime environment's directory, or None when none is built."""
    candidate = os.environ.get("CODERL_RUNTIME_PREFIX") or DEFAULT_PREFIX
    return os.path.abspath(candidate) if os.path.isfile(os.path.join(candidate, "python", "pyvenv.cfg")) else None


def runtime_python() -> str | None:
    """The runtime venv's interpreter (a link to the base one; started through the link, it finds
    the venv's site-packages)."""
    prefix = runtime_prefix()
    return os.path.join(prefix, "python", "bin", "python") if prefix else None


def node_path() -> str | None:
    """NODE_PATH for JavaScript programs: the runtime's node_modules."""
    prefix = runtime_prefix()
    path = os.path.join(prefix, "node", "node_modules") if prefix else None
    return path if path and os.path.isdir(path) else None


def go_cache() -> str | None:
    """A Go build cache holding the standard packages Go builds under CGO_ENABLED=0 (read-only; the
    Go recipe seeds each submission's private cache with links to it)."""
    prefix = runtime_prefix()
    path = os.path.join(prefix, "go-cache") if prefix else None
    return path if path and os.path.isdir(path) else None


@functools.cache
def packages() -> dict[str, dict[str, str]]:
    """What the runtime holds, by language: ``{"python": {name: version}, "javascript": {...}}``
    (what is installed, read once; /v1/capabilities lists it)."""
    prefix = runtime_prefix()
    found: dict[str, dict[str, str]] = {"python": {}, "javascript": {}}
    if prefix is None:
        return found
    lib = Path(prefix, "python", "lib")
    for site in lib.glob("python3*/site-packages"):
        for dist in metadata.distributions(path=[str(site)]):
            found["python"][dist.metadata["Name"]] = dist.version
    modules = node_path()
    for manifest in Path(modules).glob("*/package.json") if modules else ():
        info = json.loads(manifest.read_text())
        found["javascript"][info.get("name", manifest.parent.name)] = info.get("version", "")
    return {lang: dict(sorted(pkgs.items(), key=lambda kv: kv[0].lower())) for lang, pkgs in found.items()}
