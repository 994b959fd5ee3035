"""A classic-BPF seccomp filter, assembled here so the sandbox needs no libseccomp binding.

Deny-list policy: the kernel surface in threats.md (ptrace, mount, namespaces, keyring, bpf,
perf, cross-process memory, module and kexec loading, io_uring, clocks, ...) fails with EPERM;
``clone`` with any namespace flag fails with EPERM; ``clone3`` fails with ENOSYS so libc falls back
to ``clone``, whose flags a filter can inspect; limits, priority, I/O priority and scheduling can be
set for the calling process only (``_SELF_ONLY``); a foreign architecture (or the x32 ABI) kills the
process. Everything else is allowed: the namespaces, uid and limits do the rest.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_X32_BIT = 0x40000000
_NS_FLAGS = 0x7E020080  # CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME}

_DENIED = (
    "ptrace", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "keyctl", "add_key",
    "request_key", "bpf", "perf_event_open", "process_vm_readv", "process_vm_writev", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "userfaultfd", "swapon",
    "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "open_by_handle_at", "name_to_handle_at",
    "syslog", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "fanotify_init",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "lookup_dcookie", "vhangup", "kcmp",
    "pidfd_getfd", "iopl", "ioperm", "uselib", "ustat", "sysfs", "_sysctl", "create_module",
    "get_kernel_syms", "query_module", "nfsservctl",
)

# (audit arch, syscall numbers) per machine; names absent on an architecture are skipped.
_TABLES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "ptrace": 101, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272,
        "setns": 308, "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321,
        "perf_event_open": 298, "process_vm_readv": 310, "process_vm_writev": 311, "kexec_load": 246,
        "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
        "userfaultfd": 323, "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163, "quotactl": 179,
        "quotactl_fd": 443, "open_by_handle_at": 304, "name_to_handle_at": 303, "syslog": 103,
        "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
        "fanotify_init": 300, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "lookup_dcookie": 212, "vhangup": 153, "kcmp": 312,
        "pidfd_getfd": 438, "iopl": 172, "ioperm": 173, "uselib": 134, "ustat": 136, "sysfs": 139,
        "_sysctl": 156, "create_module": 174, "get_kernel_syms": 177, "query_module": 178,
        "nfsservctl": 180, "clone": 56, "clone3": 435, "personality": 135,
        "prlimit64": 302, "setpriority": 141, "ioprio_set": 251, "sched_setaffinity": 203,
        "sched_setscheduler": 144, "sched_setparam": 142, "sched_setattr": 314,
    }),
    "aarch64": (0xC00000B7, {
        "ptrace": 117, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97,
        "setns": 268, "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280,
        "perf_event_open": 241, "process_vm_readv": 270, "process_vm_writev": 271, "kexec_load": 104,
        "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "userfaultfd": 282, "swapon": 224, "swapoff": 225, "reboot": 142, "acct": 89, "quotactl": 60,
        "quotactl_fd": 443, "open_by_handle_at": 265, "name_to_handle_at": 264, "syslog": 116,
        "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171,
        "fanotify_init": 262, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "lookup_dcookie": 18, "vhangup": 58, "kcmp": 272,
        "pidfd_getfd": 438, "clone": 220, "clone3": 435, "personality": 92,
        "prlimit64": 261, "setpriority": 140, "ioprio_set": 30, "sched_setaffinity": 122,
        "sched_setscheduler": 119, "sched_setparam": 118, "sched_setattr": 274,
    }),
}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
# Calls that may change another process (argument index, value required): a program may set its
# own limits, priority and affinity, never those of the runner or the fork server, whose children
# (the later tests) would inherit them.
_SELF_ONLY = {
    "prlimit64": ((0, 0),),  # pid 0: itself
    "setpriority": ((0, 0), (1, 0)),  # PRIO_PROCESS, who 0 (PRIO_USER would reach every process)
    "ioprio_set": ((0, 1), (1, 0)),  # IOPRIO_WHO_PROCESS, who 0
    "sched_setaffinity": ((0, 0),),
    "sched_setscheduler": ((0, 0),),
    "sched_setparam": ((0, 0),),
    "sched_setattr": ((0, 0),),
}


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def _errno(err: int) -> int:
    return 0x00050000 | err


def supported_machine(machine: str | None = None) -> bool:
    machine = machine or platform.machine()
    return _ALIASES.get(machine, machine) in _TABLES


def build_filter(machine: str | None = None) -> bytes:
    """The filter program as bytes for bubblewrap's ``--seccomp FD``."""
    machine = machine or platform.machine()
    arch, numbers = _TABLES[_ALIASES.get(machine, machine)]
    eperm, enosys = _errno(errno.EPERM), _errno(errno.ENOSYS)
    prog = [
        _ins(_LD_W_ABS, 4),  # seccomp_data.arch
        _ins(_JEQ_K, arch, 1, 0),
        _ins(_RET_K, _KILL_PROCESS),
        _ins(_LD_W_ABS, 0),  # seccomp_data.nr
    ]
    if arch == 0xC000003E:
        prog += [_ins(_JGE_K, _X32_BIT, 0, 1), _ins(_RET_K, _KILL_PROCESS)]
    for name in _DENIED:
        if name in numbers:
            prog += [_ins(_JEQ_K, numbers[name], 0, 1), _ins(_RET_K, eperm)]
    prog += [_ins(_JEQ_K, numbers["clone3"], 0, 1), _ins(_RET_K, enosys)]
    # sched_setscheduler(any thread, SCHED_OTHER, {0}): the default policy at priority 0, which every
    # process here has already (nice values are kept), so it can slow no one; mono sets it on every
    # thread it starts and prints a warning into the program's stdout when denied. Other policies,
    # or SCHED_RESET_ON_FORK, fall through to the pid-0-only rule.
    prog += [
        _ins(_JEQ_K, numbers["sched_setscheduler"], 0, 3),
        _ins(_LD_W_ABS, 24),  # args[1], low word: the policy
        _ins(_JEQ_K, 0, 0, 1),
        _ins(_RET_K, _ALLOW),
        _ins(_LD_W_ABS, 0),  # seccomp_data.nr again for the checks below
    ]
    for name, required in _SELF_ONLY.items():
        prog += _only_with(numbers[name], required, eperm)
    # personality(): only the query (0xffffffff) and PER_LINUX (0) are allowed.
    prog += [
        _ins(_JEQ_K, numbers["personality"], 0, 5),
        _ins(_LD_W_ABS, 16),  # args[0], low word
        _ins(_JEQ_K, 0xFFFFFFFF, 2, 0),
        _ins(_JEQ_K, 0, 1, 0),
        _ins(_RET_K, eperm),
        _ins(_RET_K, _ALLOW),
    ]
    # clone(): no namespace flags.
    prog += [
        _ins(_JEQ_K, numbers["clone"], 0, 3),
        _ins(_LD_W_ABS, 16),
        _ins(_JSET_K, _NS_FLAGS, 0, 1),
        _ins(_RET_K, eperm),
        _ins(_RET_K, _ALLOW),
    ]
    return b"".join(prog)


def _only_with(nr: int, required: tuple[tuple[int, int], ...], deny: int) -> list[bytes]:
    """Syscall ``nr`` is allowed only when each (argument index, value) holds (low 32 bits)."""
    body: list[bytes] = []
    for i, (arg, value) in enumerate(required):
        rest = 2 * (len(required) - i - 1)  # the checks after this one
        body += [_ins(_LD_W_ABS, 16 + 8 * arg), _ins(_JEQ_K, value, 0, rest + 1)]
    body += [_ins(_RET_K, _ALLOW), _ins(_RET_K, deny)]
    return [_ins(_JEQ_K, nr, 0, len(body)), *body]


def filter_fd(program: bytes) -> int:
    """A readable fd positioned at the start of the program (bubblewrap reads it to EOF)."""
    fd = os.memfd_create("coderl-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
