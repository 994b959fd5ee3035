"""Per-task Python environments: one virtualenv per distinct ``EnvSpec``, built once, shared read-only.

Built outside the boundary, from the task's declared requirements only (task data, trusted like
the images SWE-bench builds; nothing an agent wrote runs here): ``python -m venv`` of the sandbox's
interpreter, ``pip install`` of the requirements (from ``find_links`` with no index when given:
training machines have no network), and a ``.pth`` file that puts the repository's
``pythonpath`` entries (under ``/repo``, where every episode sees its work tree) on ``sys.path``:
what ``pip install -e .`` gives, without running the repository's setup code. The venv lives at
the same path on the host and in the sandbox (mounted read-only), so its absolute paths hold.

A real project's environment (an ``EnvSpec`` with ``python``; tables per (repo, version) in
``coderl.swe.env_tables``) is a virtualenv of that CPython (``coderl.swe.interpreters``), made by
uv from a copy of the project's tree at the spec's ``source`` commit (its snapshot in the cache):
the ``pre_install`` steps run in the copy (in the build sandbox: `coderl.sandbox.build_box`), then one resolution of the pins, the requirement files
and the project's editable install (``install``, with ``build_env`` set), excluding every package
uploaded after ``resolved_at`` but the exact ``==`` pins; ``uv pip freeze`` of the result is kept
as ``coderl-lock.txt`` in the environment. A pin the project's own install requirement excludes
gives way to it, as in SWE-bench's pip order (pins first, then the project;
``coderl.swe.pin_overrides``), each such override recorded in the resolution and in the
environment (``coderl-pin-overrides.json``). A spec whose packages cannot be resolved as of its
date and that names a later one (``resolved_at_fallback``: the row's base commit's) is resolved
and installed as of that one when it resolves there, the date used and why recorded in the
resolution and in the environment (``coderl-resolution-date.json``); a spec that resolves as of
its own date is never moved. The editable install is made in ``compat`` mode (a
plain path in a ``.pth``, no import hook), and its paths are then pointed at ``/repo``, where
every episode's work tree is: the environment holds the project's metadata (version, entry
points) and its dependencies, never its code. The steps and the project's build run on the host,
from task data only (the rows' tables and the pristine snapshot, trusted like the images SWE-bench
builds), never from anything an agent wrote.

A plain environment is keyed by a hash of (interpreter, spec, find_links); a real project's by
the content of its resolution (``resolution_key``: rows share one only when what they resolve to
is the same). Each is built under a lock, and marked complete last; a failed build is removed and
raises ``EnvBuildError`` with the failing step's own last lines.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from coderl.cache import ready_once
from coderl.errors import EnvBuildError, UntrustedInput
from coderl.sandbox.build_box import run_boxed
from coderl.sandbox.pythonenv import sandbox_python
from coderl.sandbox.session import REPO
from coderl.swe import build_products, pin_overrides, service_tls
from coderl.swe.interpreters import find_python
from coderl.swe.request_rows import check_untrusted_spec
from coderl.swe.store import snapshot_path
from coderl.swe.task import EnvSpec

LOCK = "coderl-lock.txt"  # what uv resolved, `uv pip freeze` of the environment
PIN_OVERRIDES = "coderl-pin-overrides.json"  # the table's pins the project's own requirements replaced
RESOLUTION_DATE = "coderl-resolution-date.json"  # the later date it was resolved as of, and why (resolution_date)
_EXACT_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^]]*\])?\s*===?\s*[^,;*]+$")
_NO_LIMIT = "2100-01-01T00:00:00Z"
# the editable install needs a setuptools with PEP 660 (64, 2022-08): the build tools are resolved as
# of this date at the earliest (setuptools 67.8, with pkg_resources, which old projects import)
_BUILD_TOOLS, _BUILD_TOOLS_AT = ("setuptools", "wheel"), "2023-06-01T00:00:00Z"
# what the build takes from the caller's environment: uv's settings (cache, index), the index's
# certificates and proxies; nothing else of the service's environment reaches the project's build
_PASSED_ON = ("UV_", "SSL_CERT_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
_BUILD_TIMEOUT_S = 1800
# uv's words for a resolution with no solution (what the base commit's date may answer)
_UNSATISFIABLE = re.compile(r"No solution found|requirements are unsatisfiable")
# a request's spec (``EnvSpec.trusted`` False) installs wheels only: no package's build code runs here
_WHEELS_ONLY = ["--only-binary", ":all:"]


def env_key(spec: EnvSpec, find_links: Path | None = None) -> str:
    python = find_python(spec.python) if spec.python else sandbox_python()
    wheels_only = [] if spec.trusted else ["wheels-only"]  # a request's spec: built apart (_WHEELS_ONLY)
    built_from = {k: v for k, v in spec.to_dict().items() if k != "services"}  # started at test time, never built
    if spec.test_tls:  # but a TLS service's certificate is the environment's own (service_tls)
        built_from["test_tls"] = True
    blob = json.dumps([python, built_from, str(find_links or ""), *wheels_only], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def build_env(spec: EnvSpec, cache_dir: Path, *, find_links: Path | None = None) -> Path:
    """The ready virtualenv for ``spec`` (built now if it is not there yet). A spec from a request
    (``spec.trusted`` False) is checked again here, whoever calls: it never brings a shell step."""
    if not spec.trusted:
        check_untrusted_spec(spec)
    cache_dir = cache_dir.absolute()  # the sandbox binds the environment at its host path: never a relative one

    def build(dest: Path) -> str:
        if spec.python:  # checked there after each install
            _project_env(spec, dest, cache_dir, find_links)
        else:
            _run([sandbox_python(), "-m", "venv", "--without-pip", str(dest)], "create the virtualenv")
            identity = venv_identity(dest)
            if spec.requirements:
                index = ["--no-index", "--find-links", str(find_links)] if find_links else []
                _run([sys.executable, "-m", "pip", "--python", str(dest / "bin" / "python"), "install", "-q",
                      "--disable-pip-version-check", "--no-input", *index, *([] if spec.trusted else _WHEELS_ONLY),
                      *spec.requirements],
                     f"install {' '.join(spec.requirements)}")
            refuse_site_code(spec, dest, identity)
        site = site_packages(dest)
        (site / "coderl_repo.pth").write_text(
            "".join(os.path.normpath(os.path.join(REPO, p)) + "\n" for p in spec.pythonpath))
        if spec.test_tls:
            service_tls.make_certificate(dest)
        return json.dumps(spec.to_dict())  # the marker says what the environment was built from

    key = resolution_key(spec, cache_dir, find_links) if spec.python else env_key(spec, find_links)
    env = ready_once(cache_dir / "envs" / key, build)
    if spec.python and spec.source:  # a compiled project's modules, into the tree its sessions see
        repo, _, commit = spec.source.partition("@")
        build_products.place(snapshot_path(cache_dir, repo, commit), env)
    return env


# what an environment is made from besides its packages: the project's packaging files (its
# editable install's metadata, its declared dependencies) as the pre-install steps leave them
_PACKAGING = ("setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in")


def resolution_key(spec: EnvSpec, cache_dir: Path, find_links: Path | None = None) -> str:
    """The key of a real project's environment: a hash of what it is made of (the interpreter, the
    packages uv resolves for the spec as of its date, the project's packaging files after the
    pre-install steps, the install's target and build variables), not of where the spec came from
    (no table, no commit, no date): two rows whose resolutions are the same share one environment,
    and a row whose resolution differs in one package gets its own. The resolution (``uv pip
    compile`` of the same inputs the build installs) is made once per distinct spec and kept in
    ``cache_dir/resolutions/<env_key>.json``."""
    memo = cache_dir / "resolutions" / f"{env_key(spec, find_links)}.json"
    if memo.is_file():
        return json.loads(memo.read_text())["key"]
    # a directory of this call's own: threads of one process resolve specs at once (a grader's
    # concurrent gradings, a builder's jobs), so a name made of the pid collides
    memo.parent.mkdir(parents=True, exist_ok=True)
    src = Path(tempfile.mkdtemp(prefix=f"{memo.stem}.", suffix=".src", dir=memo.parent))
    try:
        _source_tree(spec, cache_dir, src)
        env = _build_environ()
        run_pre_install(spec, src)
        proc, overrides, unread = _resolve(spec, src, find_links, env)
        moved: dict[str, str] = {}
        if (proc.returncode != 0 and spec.resolved_at and spec.resolved_at_fallback > spec.resolved_at
                and _UNSATISFIABLE.search(proc.stderr)):
            # the row's date leaves it unresolvable (never an index or network failure, which a
            # second try could pass and the memo would keep): as of the base commit's date, if that resolves
            later = dataclasses.replace(spec, resolved_at=spec.resolved_at_fallback)
            proc_later, overrides_later, _ = _resolve(later, src, find_links, env)
            if proc_later.returncode == 0:
                moved = {"resolved_at": later.resolved_at, "row_date": spec.resolved_at,
                         "why": f"not resolvable as of the row's date {spec.resolved_at}: "
                                + " / ".join(proc.stderr.strip().splitlines()[-3:])[:600]}
                proc, overrides = proc_later, overrides_later
            else:
                unread += (f" (nor as of the base commit's date {later.resolved_at}: "
                           f"{' / '.join(proc_later.stderr.strip().splitlines()[-2:])[:400]})")
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-3:]
            raise EnvBuildError(f"cannot resolve the Python {spec.python} environment: {' / '.join(tail)}{unread}")
        packaging = {f: hashlib.sha256((src / f).read_bytes()).hexdigest() for f in
                     [*_PACKAGING, *spec.requirement_files] if (src / f).is_file()}
        made_of = {"python": find_python(spec.python), "resolution": proc.stdout.replace(str(src), REPO),
                   "packaging": packaging, "install": spec.install, "build_env": dict(spec.build_env),
                   "pythonpath": list(spec.pythonpath), "find_links": str(find_links or ""), "trusted": spec.trusted}
        compiled = build_products.compiled_sources_digest(src)
        if compiled:  # its build products are the environment's: shared only by the same compiled sources
            made_of["compiled_sources"] = compiled
        if spec.test_tls:  # a certificate of its own (service_tls): never shared with one without
            made_of["test_tls"] = True
        if overrides:
            made_of["pin_overrides"] = overrides
        key = "r" + hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()[:15]
        tmp = src.with_suffix(".tmp")
        # the date used, when not the row's: recorded, never keyed (the key is what it resolved to)
        tmp.write_text(json.dumps({"key": key, "spec": spec.to_dict(), **made_of,
                                   **({"resolution_date": moved} if moved else {})}, indent=1))
        tmp.replace(memo)
        return key
    finally:
        shutil.rmtree(src, ignore_errors=True)


def _resolve(spec: EnvSpec, src: Path, find_links: Path | None,
             env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], list[dict[str, str]], str]:
    """``_compile`` of the spec as of its date; when that fails and the spec has exact pins, again
    without the pins the project's own install requirement excludes (``coderl.swe.pin_overrides``):
    (uv's result, the overrides, why the project's requirements could not be read, if so)."""
    proc = _compile(spec, src, find_links, env)
    overrides: list[dict[str, str]] = []
    unread = ""
    if proc.returncode != 0 and spec.trusted and spec.install and not no_build_isolation(spec) and \
            exact_pins(list(spec.requirements)):  # a pin against the project's own requirement?
        try:
            declared = _declared_requirements(spec, src, find_links, env)
        except EnvBuildError as exc:
            declared, unread = [], f" (the project's own requirements could not be read: {exc})"
        overrides = pin_overrides.overridden_pins(list(spec.requirements), declared, python=spec.python,
                                                  install=spec.install)
        if overrides:
            proc = _compile(_without_pins(spec, overrides), src, find_links, env)
    return proc, overrides, unread


def _compile(spec: EnvSpec, src: Path, find_links: Path | None, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``uv pip compile`` of what the build installs (the project's editable install too, unless it
    is built against the installed packages), as of the spec's date."""
    wanted = src / ".coderl-requirements.in"
    wanted.write_text("".join(f"{r}\n" for r in [*spec.requirements, *(f"-r {f}" for f in spec.requirement_files)]))
    if spec.install and not no_build_isolation(spec):  # else built against the installed packages
        with wanted.open("a") as fh:
            fh.write(f"-e {spec.install}\n")
    args = [uv_binary(), "pip", "compile", "--python", find_python(spec.python), "--no-progress", "--no-header",
            "--no-annotate", "-C", "editable_mode=compat", *_resolution_args(spec, src, find_links), wanted.name]
    return subprocess.run(args, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S, cwd=src,
                          env={**env, **dict(spec.build_env)})


def _declared_requirements(spec: EnvSpec, src: Path, find_links: Path | None, env: dict[str, str]) -> list[str]:
    """The project's own ``Requires-Dist`` (``coderl.swe.pin_overrides``): its build backend's
    metadata hook run on the tree's copy, in a throwaway virtualenv of the spec's Python holding the
    backend's build requirements (resolved as of the spec's date)."""
    backend, requires, paths = pin_overrides.build_system(src)
    environ = {**env, **dict(spec.build_env)}
    with tempfile.TemporaryDirectory(prefix="coderl-metadata.") as tmp:
        venv, out = Path(tmp) / "venv", Path(tmp) / "out"
        out.mkdir()
        _run([find_python(spec.python), "-m", "venv", "--without-pip", str(venv)], "create the metadata environment")
        python = str(venv / "bin" / "python")
        tools = dataclasses.replace(spec, requirements=(), requirement_files=())
        install = [uv_binary(), "pip", "install", "--python", python, "--no-progress", *_resolution_args(tools, src, find_links)]
        hook = [python, "-c", pin_overrides.METADATA_HOOK]
        if requires:
            _run([*install, *requires], f"install the build requirements {' '.join(requires)}", cwd=src, env=environ)
        more = json.loads(_run([*hook, "requires", str(out), backend, *paths], "ask the project's build backend "
                               "for its build requirements", cwd=src, env=environ).strip().splitlines()[-1])
        if more:
            _run([*install, *more], f"install the build requirements {' '.join(more)}", cwd=src, env=environ)
        found = _run([*hook, "metadata", str(out), backend, *paths],
                     "read the project's metadata from its build backend", cwd=src, env=environ)
        return pin_overrides.requires_dist(Path(found.strip().splitlines()[-1]))


def _without_pins(spec: EnvSpec, overrides: list[dict[str, str]]) -> EnvSpec:
    """The spec with the overridden pins left out: the project's own requirement decides them."""
    dropped = {o["pin"] for o in overrides}
    return dataclasses.replace(spec, requirements=tuple(r for r in spec.requirements if r not in dropped))


def _resolution_record(spec: EnvSpec, cache_dir: Path, find_links: Path | None) -> dict[str, Any]:
    """What ``resolution_key`` recorded of the spec's resolution in ``cache_dir`` ({} when nothing)."""
    memo = cache_dir.absolute() / "resolutions" / f"{env_key(spec, find_links)}.json"
    return json.loads(memo.read_text()) if memo.is_file() else {}


def _recorded_overrides(spec: EnvSpec, cache_dir: Path, find_links: Path | None) -> list[dict[str, str]]:
    """The pin overrides the spec's resolution recorded (``resolution_key``; none when it has no record)."""
    return _resolution_record(spec, cache_dir, find_links).get("pin_overrides", [])


def resolution_date(spec: EnvSpec, cache_dir: Path, find_links: Path | None = None) -> dict[str, str]:
    """The date the spec's resolution was made as of, when it is not the spec's ``resolved_at``:
    ``{"resolved_at": the base commit's date, "row_date": ..., "why": uv's words as of the row's
    date}`` (``resolution_key`` moved it to ``resolved_at_fallback``); ``{}`` when it was not moved
    or the spec has no resolution recorded in ``cache_dir``."""
    return _resolution_record(spec, cache_dir, find_links).get("resolution_date", {})


def no_build_isolation(spec: EnvSpec) -> bool:
    """Whether the project is built against the environment's own packages (uv's
    ``UV_NO_BUILD_ISOLATION`` in the spec's ``build_env``: SWE-bench's ``pip install
    --no-build-isolation -e .`` of scikit-learn, whose ``setup.py`` imports numpy and whose
    extension modules must be built against the numpy it runs with). The packages are then
    installed before the project, and the resolution that keys the environment leaves the project
    out (its metadata needs them too)."""
    return dict(spec.build_env).get("UV_NO_BUILD_ISOLATION", "") not in ("", "0", "false")


def _build_environ() -> dict[str, str]:
    """What the build takes from the caller's environment (see ``_PASSED_ON``)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
            "LANG": "C.UTF-8", **{k: v for k, v in os.environ.items() if k.startswith(_PASSED_ON)},
            "UV_PYTHON_DOWNLOADS": "never"}  # the interpreter is find_python's: never one downloaded


def _resolution_args(spec: EnvSpec, src: Path, find_links: Path | None) -> list[str]:
    """uv's options that decide what is picked: the date (exact pins and the build tools exempt) and
    the index."""
    args = []
    if spec.resolved_at:
        args += ["--exclude-newer", spec.resolved_at]
        pins = exact_pins([*spec.requirements, *requirement_lines([src / f for f in spec.requirement_files])])
        args += [a for name in pins for a in ("--exclude-newer-package", f"{name}={_NO_LIMIT}")]
        tools_at = max(spec.resolved_at, _BUILD_TOOLS_AT)
        args += [a for name in _BUILD_TOOLS if name not in pins
                 for a in ("--exclude-newer-package", f"{name}={tools_at}")]
    if find_links:
        args += ["--no-index", "--find-links", str(find_links)]
    if not spec.trusted:
        args += _WHEELS_ONLY
    return args


def run_pre_install(spec: EnvSpec, src: Path) -> None:
    """The spec's shell steps (the operator's text: `coderl.swe.request_rows` refuses them in a
    request), each in the build sandbox with only the tree's copy writable, never on the host."""
    for step in spec.pre_install:
        what = f"run the pre-install step {step!r}"
        try:
            proc = run_boxed(["bash", "-c", step], writable=src, timeout_s=_BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise EnvBuildError(f"cannot {what}: no result after {_BUILD_TIMEOUT_S} s") from exc
        _check(proc, what)


def _project_env(spec: EnvSpec, dest: Path, cache_dir: Path, find_links: Path | None) -> None:
    """A real project's environment in ``dest`` (see the module docstring)."""
    overrides = _recorded_overrides(spec, cache_dir, find_links)
    moved = resolution_date(spec, cache_dir, find_links)
    if moved:  # installed as of the date the resolution was made as of (the base commit's)
        spec = dataclasses.replace(spec, resolved_at=moved["resolved_at"])
    if overrides:  # installed as the resolution was made: the project's requirement in their place
        spec = _without_pins(spec, overrides)
    _run([find_python(spec.python), "-m", "venv", "--without-pip", str(dest)], f"create a Python {spec.python} virtualenv")
    identity = venv_identity(dest)
    src = dest.with_name(dest.name + ".src")
    shutil.rmtree(src, ignore_errors=True)
    try:
        _source_tree(spec, cache_dir, src)
        env = _build_environ()
        run_pre_install(spec, src)
        compiled = build_products.compiled_sources_digest(src)
        before = build_products.tree_files(src) if compiled else set()
        python = str(dest / "bin" / "python")
        # byte code compiled as pip does (uv does not by default): the environment is read-only in a
        # session, so without it every process there compiles every module it imports, and the
        # compile-time warnings of old packages (invalid escapes) meet a project's `error` filters
        args = [uv_binary(), "pip", "install", "--python", python, "--no-progress",
                *(["--compile-bytecode"] if spec.trusted else [])]  # a request's: compile_site, after the check
        args += [*_resolution_args(spec, src, find_links), *spec.requirements,
                 *(a for f in spec.requirement_files for a in ("-r", str(src / f)))]
        if spec.install and no_build_isolation(spec):  # its build imports them: installed first, with
            # the build tools pip's own build would bring (setuptools' editable build needs wheel's bdist_wheel)
            named = {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in spec.requirements}
            args += [tool for tool in _BUILD_TOOLS if tool not in named]
            _run(args, f"install the Python {spec.python} environment's packages", cwd=src,
                 env={**env, **dict(spec.build_env)})
            refuse_site_code(spec, dest, identity)
        if spec.install:
            args += ["-C", "editable_mode=compat", "-e", str(src) + spec.install.removeprefix(".")]
        _run(args, f"install the Python {spec.python} environment", cwd=src, env={**env, **dict(spec.build_env)})
        refuse_site_code(spec, dest, identity)  # before uv's next call starts the interpreter
        if not spec.trusted:
            compile_site(dest)
        if compiled:  # its editable build wrote its extension modules beside their sources, as SWE-bench's
            # `pip install -e .` does (setuptools' editable_mode, distutils' inplace): kept
            build_products.keep(src, before, dest)
        lock = subprocess.run([uv_binary(), "pip", "freeze", "--python", python], capture_output=True, text=True,
                              env=env, timeout=120)
        (dest / LOCK).write_text(lock.stdout.replace(str(src), REPO))
        if overrides:
            (dest / PIN_OVERRIDES).write_text(json.dumps(overrides, indent=1))
        if moved:
            (dest / RESOLUTION_DATE).write_text(json.dumps(moved, indent=1))
        _point_at_repo(site_packages(dest), src)
    finally:
        shutil.rmtree(src, ignore_errors=True)


def venv_identity(dest: Path) -> bytes:
    """What decides where the environment's interpreter takes its standard library from: its
    ``pyvenv.cfg`` (``home``) and the ``bin/python*`` entries (links or files), as made with it."""
    bin_dir = dest / "bin"
    entries = sorted(p for p in bin_dir.iterdir() if p.name.startswith("python")) if bin_dir.is_dir() else []
    parts = [(dest / "pyvenv.cfg").read_bytes() if (dest / "pyvenv.cfg").is_file() else b""]
    for p in entries:
        parts.append(p.name.encode() + b"->" + (os.readlink(p).encode() if p.is_symlink()
                                                 else hashlib.sha256(p.read_bytes()).digest()))
    return b"\0".join(parts)


def refuse_site_code(spec: EnvSpec, dest: Path, identity: bytes) -> None:
    """A request's environment (``spec.trusted`` False) may hold no code its interpreter runs at
    start, which would run on the host (uv's next call on the environment queries the interpreter
    with ``site``, ``uv pip freeze`` among them; uv's byte-code compilation starts it too, so a
    request's environment is compiled after this check, ``-S``; the grader's helpers start it ``-I
    -S``): its ``pyvenv.cfg`` and ``bin/python*`` as they were made (``identity``: a wheel's data
    files can replace ``pyvenv.cfg``, whose ``home`` names the standard library even under ``-S``),
    no ``sitecustomize`` / ``usercustomize`` in site-packages or a directory a ``.pth`` file adds,
    and no ``.pth`` file with an ``import`` line, but setuptools' own ``distutils-precedence.pth``
    when setuptools alone installs it and its ``_distutils_hack`` (a request names packages, never
    an index or a URL, so setuptools is the index's). Checked after each install, before anything
    starts that interpreter again; the operator's own specs (tables, task files) are trusted as
    SWE-bench trusts its images'."""
    if spec.trusted:
        return
    site = site_packages(dest)
    found = [] if venv_identity(dest) == identity else ["pyvenv.cfg or bin/python replaced"]
    dirs = [site]
    for pth in sorted(site.glob("*.pth")):
        lines = [line for line in pth.read_text(errors="replace").splitlines() if line.strip()]
        runs = [line for line in lines if line.startswith(("import ", "import\t"))]  # site exec()s these
        if runs and not (pth.name == _SETUPTOOLS_PTH and _setuptools_alone_owns(site)):
            found.append(pth.name)
        dirs += [site / line.strip() for line in lines if line not in runs and not line.startswith("#")]
    for folder in dict.fromkeys(dirs):
        if folder.is_dir():
            found += [str(p.relative_to(site)) if p.is_relative_to(site) else str(p)
                      for p in sorted([*folder.glob("sitecustomize*"), *folder.glob("usercustomize*")])]
    if found:
        raise UntrustedInput(f"a request's environment may not hold code that runs at the interpreter's start "
                             f"({', '.join(found)}); build it from the operator's task data instead")


_SETUPTOOLS_PTH = "distutils-precedence.pth"


def _setuptools_alone_owns(site: Path) -> bool:
    """Whether setuptools' RECORD lists ``distutils-precedence.pth`` and no other distribution's
    lists it or a file of ``_distutils_hack`` (what that ``.pth`` imports)."""
    owners = set()
    for record in site.glob("*.dist-info/RECORD"):
        paths = [line.split(",", 1)[0] for line in record.read_text(errors="replace").splitlines()]
        if any(p == _SETUPTOOLS_PTH or p.startswith("_distutils_hack/") for p in paths):
            owners.add(record.parent.name.split("-", 1)[0].lower())
    return owners == {"setuptools"}


def compile_byte_code(env_dir: Path, target: Path, *options: str, timeout_s: float) -> subprocess.CompletedProcess:
    """``compileall`` of ``target`` by the environment's interpreter, ``-I -S``: nothing of its site
    (its ``.pth`` files) runs. Exit 1: some file did not compile (a package's or a fixture's Python
    2 leftovers), the rest did."""
    return subprocess.run([str(env_dir / "bin" / "python"), "-I", "-S", "-m", "compileall", "-q", "-j", "0",
                           *options, str(target)], capture_output=True, timeout=timeout_s,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"})


def compile_site(dest: Path) -> None:
    """The environment's byte code without ``site`` starting: what uv's ``--compile-bytecode``
    does for the operator's specs, which starts the interpreter with it. A file that does not
    compile is skipped, as uv's compilation skips it."""
    compile_byte_code(dest, site_packages(dest), timeout_s=_BUILD_TIMEOUT_S)


def _source_tree(spec: EnvSpec, cache_dir: Path, src: Path) -> None:
    """The project's files at ``spec.source`` (``owner/name@sha``), copied from its snapshot."""
    src.mkdir(parents=True, exist_ok=True)
    if not spec.source:
        return
    repo, _, commit = spec.source.partition("@")
    snapshot = snapshot_path(cache_dir, repo, commit)
    if not (snapshot / ".git").is_dir():
        raise EnvBuildError(f"the environment's source {spec.source} has no snapshot in {cache_dir}: build the "
                            "task rows' snapshots there first (`coderl data swe-bench --cache`)")
    archive = subprocess.run(["git", "-C", str(snapshot), "archive", "--format=tar", "HEAD"], capture_output=True,
                             timeout=300)
    if archive.returncode != 0:
        raise EnvBuildError(f"cannot read the source tree {spec.source}: {archive.stderr.decode()[-300:]}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tf:
        tf.extractall(src, filter="data")


def exact_pins(requirements: list[str]) -> list[str]:
    """The names of the ``name==version`` pins: the date never limits them (they name the version)."""
    return [m.group(1) for r in requirements if (m := _EXACT_PIN.match(r))]


def requirement_lines(files: list[Path]) -> list[str]:
    """The requirements the files name, those of the files they include (``-r``) too, comments off."""
    out = []
    for path in files:
        for line in path.read_text().splitlines() if path.is_file() else []:
            line = line.split(" #", 1)[0].strip()
            if line.startswith(("-r ", "--requirement ")):
                out += requirement_lines([path.parent / line.split(None, 1)[1]])
            elif line and not line.startswith(("#", "-")):
                out.append(line)
    return out


def _point_at_repo(site: Path, src: Path) -> None:
    """The editable install's paths (its ``.pth``, ``.egg-link``, ``direct_url.json``) name the
    build's copy of the tree: from now on they name ``/repo``, the episode's work tree."""
    for path in [*site.glob("*.pth"), *site.glob("*.egg-link"), *site.glob("*.dist-info/direct_url.json"),
                 *site.glob("__editable__*")]:
        text = path.read_text(errors="surrogateescape")
        if str(src) in text:
            path.write_text(text.replace(str(src), REPO), errors="surrogateescape")


def uv_binary() -> str:
    """uv, from its Python package (a dependency of coderl) or PATH."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            raise EnvBuildError("uv is not installed: `pip install uv` (it builds the projects' environments)") from None
        return found


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if not found:
        raise EnvBuildError(f"{venv} has no site-packages directory")
    return found[0]


def _run(argv: list[str], what: str, *, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S, cwd=cwd, env=env)
    except subprocess.TimeoutExpired as exc:
        raise EnvBuildError(f"cannot {what}: no result after {_BUILD_TIMEOUT_S} s") from exc
    _check(proc, what)
    return proc.stdout


# uv's words when a native build misses a header ("... need to install a library that provides `x.h`")
_MISSING_LIBRARY = "need to install a library"
SYSTEM_BUILD_PACKAGES = "docker/swe-build-apt.txt"  # the host's libraries compiled projects build against


def _check(proc: subprocess.CompletedProcess[str], what: str) -> None:
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        hint = ""
        if _MISSING_LIBRARY in (proc.stderr or proc.stdout):
            hint = f" (scripts/setup.sh installs the system libraries compiled projects build against: {SYSTEM_BUILD_PACKAGES})"
        raise EnvBuildError(f"cannot {what}: {' / '.join(tail) or f'exit {proc.returncode}'}{hint}")
