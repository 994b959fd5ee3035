"""A compiled project's build products (issue 45 item 3): kept with its environment, laid into the
snapshot its episodes and grading runs see.

A project with extension modules (scikit-learn, matplotlib, astropy: Cython and C) is imported from
its work tree (``/repo``), so its compiled modules must be in the tree, beside their packages, as
SWE-bench's ``pip install -e .`` (``setup.py develop``: ``build_ext --inplace``) leaves them in its
image's checkout. The environment is built from a copy of the tree (``coderl.swe.environment``),
which is thrown away: what the build wrote there that an import finds (extension modules and
generated Python modules such as a ``_version.py``) is kept in the environment (``coderl-build/``,
listed with their hashes in ``coderl-build.json``) and copied into the snapshot of the commit the
environment was built from, where no file is (never over a tracked one), once per (snapshot,
environment), before any session mounts the snapshot. ``.git/info/exclude`` names each, so neither
an agent's ``git status`` nor the diff capture sees them: a diff cannot carry or replace one, and
a grading run (a fresh overlay over the snapshot) always imports the products of the pristine
build. What this does not do: rebuild. A change to a compiled source (``.pyx``, ``.c``) has no
effect on the tests (SWE-bench's evaluation re-runs the install after the patch; here the build
runs on the host, from task data only, never from what an agent wrote).

An environment's key (``environment.resolution_key``) includes the digest of the tree's compiled
sources (``compiled_sources_digest``; empty, and so not in the key, for a pure-Python tree): two
commits share an environment, and so its products, only when their compiled sources are the same.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
from pathlib import Path

from coderl.cache import file_lock
from coderl.errors import EnvBuildError

PRODUCTS = "coderl-build"  # in the environment: the products, at their paths in the tree
MANIFEST = "coderl-build.json"  # in the environment: {path: sha256}
# what a build compiles (Cython, C/C++, their headers, scikit-learn's Tempita templates)
COMPILED_SUFFIXES = (".pyx", ".pxd", ".pxi", ".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".tp")
# what an import finds: an extension module, a generated module
_KEPT_SUFFIXES = (".so", ".py")
_SKIPPED_DIRS = frozenset({".git", "build", ".eggs", "__pycache__", "node_modules"})


def tree_files(tree: Path) -> set[str]:
    """Every file under ``tree`` (relative paths), the build's scratch directories left out."""
    found = set()
    for root, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS and not d.endswith(".egg-info")]
        rel = os.path.relpath(root, tree)
        found.update(os.path.normpath(os.path.join(rel, f)) for f in files)
    return found


def compiled_sources_digest(tree: Path) -> str:
    """A digest of the tree's compiled sources (paths and bytes); "" when it has none."""
    sources = sorted(f for f in tree_files(tree) if f.endswith(COMPILED_SUFFIXES))
    if not sources:
        return ""
    digest = hashlib.sha256()
    for rel in sources:
        digest.update(rel.encode() + b"\0" + hashlib.sha256((tree / rel).read_bytes()).digest())
    return digest.hexdigest()


def keep(src: Path, before: set[str], env_dir: Path) -> list[str]:
    """Copy what the build wrote into ``src`` (files not in ``before``) that an import finds into
    ``env_dir/coderl-build``, listed in ``env_dir/coderl-build.json``; the kept paths."""
    kept: dict[str, str] = {}
    for rel in sorted(tree_files(src) - before):
        if not rel.endswith(_KEPT_SUFFIXES) or (src / rel).is_symlink():
            continue
        data = (src / rel).read_bytes()
        target = env_dir / PRODUCTS / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, target)
        kept[rel] = hashlib.sha256(data).hexdigest()
    if kept:
        (env_dir / MANIFEST).write_text(json.dumps(kept, indent=1, sort_keys=True))
    return list(kept)


@functools.lru_cache(maxsize=64)
def blob_ids(env_dir: Path) -> dict[str, str]:
    """path -> git blob id of each build product ``env_dir`` lays into its snapshot: the grader's
    base tree holds them (a native extension module a run loads from the work tree must be the
    base's: these are the pristine build's)."""
    manifest = env_dir / MANIFEST
    if not manifest.is_file():
        return {}
    out = {}
    for rel in json.loads(manifest.read_text()):
        data = (env_dir / PRODUCTS / rel).read_bytes()
        out[rel] = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    return out


def place(snapshot: Path, env_dir: Path) -> int:
    """Lay ``env_dir``'s build products into ``snapshot`` (once: a marker beside the snapshot), each
    named in the snapshot's ``.git/info/exclude``; the number placed. A path the snapshot already
    holds with other bytes (a tracked file, another environment's build) is an ``EnvBuildError``:
    the tests would import something else than this environment's build."""
    manifest = env_dir / MANIFEST
    if not manifest.is_file() or not (snapshot / ".git").is_dir():
        return 0
    marker = snapshot.with_name(f"{snapshot.name}.build-{env_dir.name}")
    products: dict[str, str] = json.loads(manifest.read_text())
    if marker.exists():
        return len(products)
    with file_lock(marker):
        if marker.exists():
            return len(products)
        for rel, sha in products.items():
            target = snapshot / rel
            if target.is_symlink() or target.exists():
                if target.is_symlink() or hashlib.sha256(target.read_bytes()).hexdigest() != sha:
                    raise EnvBuildError(f"{snapshot.name} already holds {rel}, not the one the environment "
                                        f"{env_dir.name} built: its tests would import another build (a snapshot "
                                        f"holds one environment's build: to lay this one, remove {snapshot} and "
                                        f"{snapshot.name}.* beside it from the cache)")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(env_dir / PRODUCTS / rel, target)
        exclude = snapshot / ".git" / "info" / "exclude"
        exclude.parent.mkdir(exist_ok=True)
        text = exclude.read_text() if exclude.is_file() else ""
        have = set(text.splitlines())
        lines = [f"/{rel}" for rel in products if f"/{rel}" not in have]
        if lines:
            exclude.write_text(text + ("\n" if text and not text.endswith("\n") else "") + "\n".join(lines) + "\n")
        marker.write_text(f"{env_dir}\n")
    return len(products)
