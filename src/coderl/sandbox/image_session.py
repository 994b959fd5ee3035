"""The bubblewrap command line of a session whose root filesystem is a task's image.

Same boundary as a host-root session (``isolation.namespace_args``: user/pid/net/mount/ipc/uts/cgroup
namespaces, every capability dropped, no_new_privs, the seccomp filter, a cleared environment, the
episode's cgroup), with the root replaced: ``/`` is the episode's overlay of the unpacked image
(``image_rootfs``; the upper layer is the episode's own size-capped tmpfs, mounted nosuid,nodev),
writable, so the agent may change system paths too, in its own layer only. Fresh ``/proc``, ``/dev``,
``/tmp`` and ``/dev/shm`` as in every sandbox; our hosts file (localhost only).

PID 1 (``session_init.py``) must not depend on what the image holds (a Harbor image may have no
Python, a SWE-bench one an older C library than the host's Python was built against), so it runs
on the sandbox's own interpreter, bound read-only under ``/coderl-host`` together with the host
libraries it links, started through the host's dynamic loader with those libraries only
(``ld.so --library-path``). What it then executes (``/bin/bash -c CMD``) is the image's, loaded
by the image's loader. The sandbox sees the host's interpreter and C libraries read-only, as a
host-root session does; nothing else of the host.

The identity is the image's user (or the task's): ``--uid/--gid`` in the user namespace, mapped to
the service's own user, which owns the unpacked files; no capabilities either way, so uid 0 in
here can do no more than uid 65534 can in a host-root session (its own files, nothing else).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import subprocess
from pathlib import Path

from coderl.cache import default_cache_dir, exclusive_file
from coderl.sandbox import isolation
from coderl.sandbox.pythonenv import sandbox_python, sandbox_python_prefix, venv_base_prefix

HOST_DIR = "/coderl-host"


@functools.cache
def host_python() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """(the command prefix that runs the sandbox's interpreter inside an image, the read-only binds it
    needs as (host path, path inside)). The interpreter's shared libraries, as ``ldd`` finds them,
    are reached through ``--library-path`` only, so the image's own libraries never mix in."""
    exe = os.path.realpath(sandbox_python())
    out = subprocess.run(["ldd", exe], capture_output=True, text=True, timeout=30, check=True).stdout
    loader, lib_dirs = "", []
    for line in out.splitlines():
        words = line.split()
        path = words[2] if len(words) > 2 and words[1] == "=>" else words[0] if words and words[0].startswith("/") else ""
        if not path.startswith("/"):
            continue
        real = os.path.realpath(path)
        if "=>" not in words:
            loader = real
        lib_dirs.append(os.path.dirname(real))
    prefix = os.path.realpath(sandbox_python_prefix())
    binds = dict.fromkeys([prefix, *lib_dirs])
    inside = {p: HOST_DIR + p for p in binds}
    library_path = ":".join(dict.fromkeys([f"{inside[prefix]}/lib", *(inside[d] for d in lib_dirs)]))
    command = (HOST_DIR + loader, "--library-path", library_path, HOST_DIR + exe)
    return command, tuple(inside.items())


@functools.cache
def interpreter_wrapper() -> str:
    """A ``/bin/sh`` script bound over the sandbox's interpreter at its host path inside an image: it
    runs the real one through the host's loader with the host's libraries (as PID 1 runs), keeping
    the name it was started by (``ld.so --argv0``), so a harness's virtualenv of this interpreter
    finds its ``pyvenv.cfg`` and needs nothing of the image's libraries (libssl, libffi, a newer
    libc). What the harness then runs is the image's own. It lives in the service's cache, in a
    directory only the service's user can write (`coderl.cache.exclusive_file`): a shared /tmp
    would let another local user plant it first."""
    command, _ = host_python()
    loader, _, library_path, exe = command
    text = (f"#!/bin/sh\nexec {shlex.quote(loader)} --argv0 \"$0\" --library-path {shlex.quote(library_path)} "
            f"{shlex.quote(exe)} \"$@\"\n")
    name = f"image-python-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    return str(exclusive_file(default_cache_dir() / "host" / name, text))  # never a file someone else left


def with_interpreters(binds: list[str]) -> list[str]:
    """``binds`` and, after each virtualenv among them (a harness's own install), the install tree of
    the interpreter it links to by absolute path, which an image does not have. An interpreter under
    /usr cannot be bound over the image's own /usr: such a venv does not run in an image (a harness
    for images is installed on a Python of its own: pyenv, uv, python-build-standalone)."""
    out = []
    for path in binds:
        out.append(path)
        if os.path.isfile(os.path.join(path, "pyvenv.cfg")):
            base = venv_base_prefix(path) or sandbox_python_prefix()
            if not base.startswith("/usr/") and base != "/usr":
                out.append(base)
    return out


def image_argv(root: Path, *, workdir: str, uid: int, gid: int, tmp_mb: int, inside_binds: list[str],
               ro_binds: list[str], binds: list[tuple[str, str, str]], setenv: dict[str, str],
               tmpfs: list[str] | None = None) -> list[str]:
    """bwrap's argv up to (not including) ``--seccomp`` for a sandbox rooted at ``root`` (a mounted
    overlay of an image); ``inside_binds``: the session's own files (``--ro-bind SRC DST`` triples)."""
    args = isolation.namespace_args(uid, gid)
    args += ["--bind", str(root), "/", "--proc", "/proc", "--dev", "/dev",
             "--size", str(tmp_mb << 20), "--tmpfs", "/tmp",
             "--size", str(min(tmp_mb, 256) << 20), "--tmpfs", "/dev/shm"]
    for src, dst in host_python()[1]:
        args += ["--ro-bind", src, dst]
    args += inside_binds
    if (root / "etc").is_dir():
        args += ["--ro-bind", isolation.inside_path("etc_hosts.txt"), "/etc/hosts"]
    bound = list(dict.fromkeys(with_interpreters(ro_binds)))
    for path in bound:
        args += ["--ro-bind", path, path]
    if os.path.realpath(sandbox_python_prefix()) in bound:  # a harness on the sandbox's interpreter
        args += ["--ro-bind", interpreter_wrapper(), os.path.realpath(sandbox_python())]
    for kind, src, dst in binds:
        args += ["--dir", os.path.dirname(dst), kind, src, dst]
    for path in tmpfs or []:
        args += ["--size", str(min(tmp_mb, 256) << 20), "--tmpfs", path]
    for name, value in setenv.items():
        args += ["--setenv", name, value]
    args += ["--dir", workdir, "--chdir", workdir]  # made in the episode's layer when the image lacks it
    return args
