"""The host's half of importing the environment's modules before a grading run's go-ahead.

A grading run started ahead (``RepoGrader(warm=...)``) waits, pytest imported, while the host
applies the diff. The modules of the distributions the project requires can be imported then too,
off the grading's path, when importing them early is the same as importing them during the run:
``pytest_inside/preimport.py`` probes which (once per environment and launcher build, boxed, with the
environment's interpreter: ``probe``; the answer kept in a file of the grader's cache, never in the
environment). Two things the probe cannot see are checked here, so that the run imports what
plain pytest would have imported:

- a work tree that holds a module or package of the same name anywhere (pytest puts test
  directories at the front of ``sys.path``, where it would shadow the environment's): names the
  base commit's tree holds are never imported ahead for its tasks (``usable``), and a grading whose
  diff wrote such a path is run again without any (``shadowed``, on the session's overlay upper
  layer, read on the host before the go-ahead);
- a module of the project itself, or of anything outside the interpreter and the environment: the
  probe drops it (its import fails there, or reaches outside).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from coderl.errors import CoderlError
from coderl.swe.environment import site_packages
from coderl.swe.grading_run import base_tree, compiled_launcher, launcher_build, run_env_python

CACHE = "grading-preimport"
_PROBE_TIMEOUT_S = 120
# what in a path makes it a module of that name, for ``import name``
_MODULE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw", ".so", ".pyd")


def cache_file(root: Path, env: Path) -> Path | None:
    """Where the probe's answer for ``env`` is kept under ``root`` (the grader's cache): one file
    per environment and compiled launcher build (a rebuilt environment, or a new probe, asks again).
    None when the launcher runs from source (no build to key on)."""
    name = launcher_build(env)
    return None if name is None else root / CACHE / f"{name}.json"


def known(root: Path, env: Path) -> tuple[str, ...] | None:
    """The modules ``env``'s grading runs may import ahead, or None when not probed yet."""
    path = cache_file(root, env)
    if path is None:
        return ()
    try:
        return tuple(json.loads(path.read_text())["preimport"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return ()


def probe(root: Path, env: Path) -> tuple[str, ...]:
    """Probe ``env`` (``launcher.py preimports``, boxed) and keep the answer; () when it fails,
    kept too, so a failing probe is not run on every grading."""
    path = cache_file(root, env)
    if path is None:
        return ()
    names: tuple[str, ...] = ()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="probe-", dir=path.parent) as tmp:
            proc = run_env_python(env, [str(compiled_launcher(env)), "preimports", str(site_packages(env))],
                                  writable=Path(tmp), timeout_s=_PROBE_TIMEOUT_S)
        found = json.loads(proc.stdout)["preimport"]
        if isinstance(found, list) and all(isinstance(n, str) and n.isidentifier() for n in found):
            names = tuple(found)
    except (CoderlError, OSError, subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
        names = ()
    try:
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"preimport": list(names)}))
        partial.replace(path)
    except OSError:
        pass
    return names


def names_in(paths: Iterable[str], names: Iterable[str]) -> set[str]:
    """The ``names`` that some path (relative, ``/``-separated) has as a module or package name
    in any of its parts: ``werkzeug/``, ``werkzeug.py``, ``werkzeug.cpython-311-x86_64-linux-gnu.so``."""
    wanted = set(names)
    found = set()
    for path in paths:
        for part in path.split("/"):
            stem = part.split(".", 1)[0]
            if stem in wanted and (part == stem or part.endswith(_MODULE_SUFFIXES)):
                found.add(stem)
    return found


@lru_cache(maxsize=256)
def usable(snapshot: Path, names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` less those the snapshot's base commit holds a module or package of."""
    held = names_in(base_tree(snapshot), names)
    return tuple(n for n in names if n not in held)


def shadowed(upper: Path, names: Iterable[str]) -> set[str]:
    """The ``names`` a grading session's overlay upper layer (what the diff and the restores wrote)
    holds a module or package of; read on the host, no link followed."""
    paths = []
    for top, dirs, files in os.walk(upper):
        rel = os.path.relpath(top, upper)
        paths.extend(name if rel == "." else f"{rel}/{name}" for name in (*dirs, *files))
    return names_in(paths, names)
