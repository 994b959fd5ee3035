"""The bubblewrap command line of a slot: what the sandbox sees of the host, and nothing more.

Namespaces: user, pid, net, mount, ipc, uts, cgroup (all new); uid/gid 65534; every capability
dropped; no_new_privs (bubblewrap sets it for the seccomp filter); no further user namespaces.
Filesystem: /usr (and the merged-usr links), the sandbox Python, its runtime packages and the
toolchains read-only (what compilers reuse, built in the host's cache, at /coderl/toolchain), a
few /etc files the runtimes need (not passwd/shadow, and our own hosts file naming only localhost
instead of the host's), fresh /proc and /dev, and size-capped tmpfs for the work dir /box, /tmp,
/mnt and /dev/shm. The environment is cleared. Network: only the namespace's own loopback, which
reaches nothing on the host.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from importlib import resources

from coderl.sandbox.program import BOX, MNT
from coderl.sandbox.pythonenv import sandbox_python, sandbox_python_prefix
from coderl.sandbox.runtime_env import runtime_prefix

SCRATCH = ("/tmp", "/dev/shm", MNT)  # wiped with the work dir whenever a run left anything there
INSIDE_DIR = "/coderl"
INSIDE_FILES = ("runner.py", "zygote_handle.py", "status_rules.py", "run_record.py", "prelude_scan.py", "zygote.py",
                "wire.py", "frames.py", "pid1.py", "output_cap.py", "workdir.py",
                "reap.py")  # the slot's own code, stdlib only
RUNNER_PATH_INSIDE = INSIDE_DIR + "/runner.py"
SANDBOX_UID = 65534
_ETC = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
        "/etc/java-17-openjdk", "/etc/java-21-openjdk", "/etc/ssl/certs/java")
_OWN_ETC = (("etc_hosts.txt", "/etc/hosts"), ("etc_nsswitch.txt", "/etc/nsswitch.conf"))  # ours: localhost resolves


def inside_path(name: str) -> str:
    """Where one of INSIDE_FILES is on the host."""
    return str(resources.files("coderl.sandbox") / name)


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def _root_links() -> list[str]:
    args: list[str] = ["--ro-bind", "/usr", "/usr"]
    for path in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def bwrap_argv(*, seccomp_fd: int, oom_fd: int | None, extra_binds: Iterable[tuple[str, str]],
               tmpfs_mb: int) -> list[str]:
    """The full argv that starts a slot's runner inside the sandbox."""
    args = boundary_args(extra_binds)
    size = str(tmpfs_mb * 1024 * 1024)
    args += [
        *(a for name in INSIDE_FILES for a in ("--ro-bind", inside_path(name), f"{INSIDE_DIR}/{name}")),
        "--proc", "/proc", "--dev", "/dev",
        "--size", size, "--tmpfs", BOX,
        "--size", size, "--tmpfs", "/tmp",
        "--size", size, "--tmpfs", MNT,
        "--size", str(min(tmpfs_mb, 256) * 1024 * 1024), "--tmpfs", "/dev/shm",
        "--remount-ro", "/",  # bubblewrap's root is a tmpfs: read-only, or it would carry state
        "--chdir", BOX,
        "--seccomp", str(seccomp_fd),
        "--", sandbox_python(), "-I", "-S", RUNNER_PATH_INSIDE, ":".join((BOX, *SCRATCH)), "pidns",
        "-" if oom_fd is None else str(oom_fd),
    ]
    return args


def boundary_args(extra_binds: Iterable[tuple[str, str]]) -> list[str]:
    """bwrap and the part of its command line every sandbox shares (slots and agent sessions):
    namespaces, identity, environment, the read-only system files and ``extra_binds`` (host path,
    path inside) read-only."""
    args = namespace_args() + _root_links()
    for path in _ETC:
        args += ["--ro-bind-try", path, path]
    for name, path in _OWN_ETC:
        args += ["--ro-bind", inside_path(name), path]
    own = ((p, p) for p in (sandbox_python_prefix(), runtime_prefix()) if p)
    return args + ro_bind_args((*own, *extra_binds))


def ro_bind_args(binds: Iterable[tuple[str, str]]) -> list[str]:
    """bwrap's read-only binds of ``binds`` (host path, path inside): those that exist, once per
    target, none under ``/usr/`` (the host's, bound whole)."""
    args: list[str] = []
    seen = set()
    for path, target in binds:
        if not target.startswith("/usr/") and target not in seen and os.path.exists(path):
            seen.add(target)
            args += ["--ro-bind", path, target]
    return args


def namespace_args(uid: int = SANDBOX_UID, gid: int = SANDBOX_UID) -> list[str]:
    """bwrap and what every sandbox shares whatever its root filesystem (the host's system files or
    an image's, ``coderl.sandbox.image_session``): the namespaces, the identity without capabilities,
    the cleared environment."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise FileNotFoundError("bwrap not found")
    return [
        bwrap,
        "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try", "--disable-userns",
        "--uid", str(uid), "--gid", str(gid), "--hostname", "sandbox",
        "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--as-pid-1",
        "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp",
        "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp",
    ]


def at_host_paths(argv: list[str], binds: Iterable[tuple[str, str]]) -> list[str]:
    """``argv`` with each bind's path inside replaced by its host path: ``--isolation none`` has no
    mount namespace, so a compile argv naming ``/coderl/toolchain/...`` uses the host's directory."""
    moved = [(target, path) for path, target in binds if target != path]
    for target, path in moved:
        argv = [arg.replace(target, path) for arg in argv]
    return argv


def unisolated_argv(box: str, scratch: str, oom_fd: int | None) -> list[str]:
    """``--isolation none``: the runner as a plain child process. No boundary at all."""
    return [sandbox_python(), "-I", "-S", inside_path("runner.py"), f"{box}:{scratch}", "nopidns",
            "-" if oom_fd is None else str(oom_fd)]
