"""The build sandbox: where an environment's shell steps run (a task file's ``pre_install``).

Those steps come from the operator's task files or the bundled environment tables, never from a
request (`coderl.swe.request_rows` refuses them there), and still run boxed: a task file may be
third-party data nobody here has read. The boundary is the sandbox's own (`isolation.boundary_args`:
user/pid/net/mount/ipc/uts/cgroup namespaces, uid 65534, every capability dropped, no further user
namespaces, a cleared environment, the host's system files read-only and none of its accounts or
secrets) plus its seccomp filter, with fresh ``/proc``, ``/dev`` and ``/tmp``, a read-only root,
and one directory writable: the build's own tree, at its host path. No network: a shell step edits
the tree; the packages come after it, from the resolver.

The grader's host-side helpers run an environment's interpreter here too (``ro_binds``: the
environment, its base interpreter, the snapshot they read): starting it reads the environment's
``.pth`` files, whose ``import`` lines run, and a request's environment holds wheels a request named.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from coderl.errors import IsolationUnavailable
from coderl.sandbox import isolation, seccomp


def build_argv(argv: list[str], *, writable: Path, seccomp_fd: int, ro_binds: Sequence[str] = ()) -> list[str]:
    """bubblewrap's argv that runs ``argv`` in ``writable`` (the one writable path) inside the box,
    ``ro_binds`` (host paths) read-only at their own paths."""
    try:
        args = isolation.boundary_args([])
    except FileNotFoundError:
        raise IsolationUnavailable("a build step needs the build sandbox: bubblewrap (bwrap) is not installed "
                                   "(apt-get install -y bubblewrap)") from None
    tree = str(writable.resolve())
    binds = isolation.ro_bind_args((p, p) for p in ro_binds)  # after /tmp's tmpfs, which would hide one under it
    return [*args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", *binds, "--bind", tree, tree,
            "--remount-ro", "/", "--chdir", tree, "--seccomp", str(seccomp_fd), "--", *argv]


def run_boxed(argv: list[str], *, writable: Path, timeout_s: float, ro_binds: Sequence[str] = (),
              input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``argv`` run in the build sandbox over ``writable`` (``ro_binds`` read-only, ``input`` on its
    stdin); its exit status and output as `subprocess.run` gives them (raises
    `subprocess.TimeoutExpired` past ``timeout_s``)."""
    if not seccomp.supported_machine():
        raise IsolationUnavailable("a build step needs the build sandbox: no seccomp syscall table for this machine")
    fd = os.memfd_create("coderl-build-seccomp")
    try:
        os.write(fd, seccomp.build_filter())
        os.lseek(fd, 0, os.SEEK_SET)
        stdin = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
        return subprocess.run(build_argv(argv, writable=writable, seccomp_fd=fd, ro_binds=ro_binds),
                              capture_output=True, text=True, timeout=timeout_s, pass_fds=(fd,), **stdin)
    finally:
        os.close(fd)
