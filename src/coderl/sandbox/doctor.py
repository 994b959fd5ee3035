"""`coderl sandbox doctor`: what isolation this host gives, what is missing and why.

Every check runs the real thing: a real slot starts, probe programs run inside it, and every
language's self-test program runs through the engine (DMOJ style: a language whose self-test fails
is reported, not silently offered).
"""

from __future__ import annotations

import asyncio
import platform
import subprocess
from dataclasses import asdict, dataclass

from coderl.errors import CoderlError
from coderl.sandbox import languages
from coderl.sandbox.cgroups import detect
from coderl.sandbox.engine import Engine, isolation_problem
from coderl.sandbox.isolation import bwrap_path
from coderl.sandbox.program import Program
from coderl.sandbox.result import Limits
from coderl.sandbox.runtime_env import DEFAULT_PREFIX, runtime_prefix

_PROBE = r"""
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
status = {l.split(':')[0]: l.split(':', 1)[1].strip() for l in open('/proc/self/status')}
print('uid', os.getuid())
print('caps', status['CapEff'])
print('no_new_privs', status['NoNewPrivs'])
print('seccomp', status['Seccomp'])
print('ptrace', libc.ptrace(16, 1, 0, 0))
print('interfaces', ','.join(n for _, n in socket.if_nameindex()))
try:
    open('/usr/coderl-probe', 'w'); print('ro_root', 'no')
except OSError:
    print('ro_root', 'yes')
print('pids', len([p for p in os.listdir('/proc') if p.isdigit()]))
"""
#: What the runtime environment must give a program in a slot (a sample of docker/'s pinned lists).
_RUNTIME_PYTHON = ("import numpy, scipy, pandas, sympy, networkx, sortedcontainers\n"
                   "print(' '.join(f'{m.__name__} {m.__version__}' for m in (numpy, sortedcontainers)))")
_RUNTIME_NODE = "const _ = require('lodash');\nconsole.log('lodash ' + _.VERSION);"


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def run_checks(isolation: str = "bwrap") -> list[Check]:
    checks = [Check("kernel", True, f"{platform.system()} {platform.release()} {platform.machine()}")]
    bwrap = bwrap_path()
    version = _first_line([bwrap, "--version"]) if bwrap else "not installed"
    checks.append(Check("bubblewrap", bwrap is not None, f"{bwrap or '-'} ({version})"))
    problem = isolation_problem()
    checks.append(Check("isolation prerequisites", problem is None, problem or "user namespaces, seccomp table"))
    cg = detect()
    checks.append(Check("cgroups", cg.version != "none",
                        cg.detail + ("" if cg.version != "none" else
                                     "; fallback: the runner polls resident memory every 10 ms (weaker)")))
    try:
        checks += asyncio.run(_engine_checks(isolation))
    except CoderlError as exc:
        checks.append(Check("sandbox start", False, str(exc)))
    return checks


async def _engine_checks(isolation: str) -> list[Check]:
    out: list[Check] = []
    async with Engine(slots=1, isolation=isolation) as engine:
        out.append(Check("sandbox start", True, f"isolation={engine.isolation}, 1 slot"))
        ex = await engine.execute(Program("python", _PROBE), [b""], Limits(cpu_s=5, wall_s=10))
        facts = dict(line.split(" ", 1) for line in ex.results[0].stdout.decode().splitlines() if " " in line)
        expect = {
            "uid": ("65534", "unprivileged uid 65534"),
            "caps": ("0000000000000000", "no capabilities"),
            "no_new_privs": ("1", "no_new_privs set"),
            "seccomp": ("2", "seccomp filter active"),
            "ptrace": ("-1", "ptrace denied"),
            "interfaces": ("lo", "network: loopback of its own namespace only"),
            "ro_root": ("yes", "system files read-only"),
        }
        for key, (want, label) in expect.items():
            got = facts.get(key, "?")
            out.append(Check(label, got == want, f"{key}={got}"))
        for name, lang in sorted(engine.languages().items()):
            cls = languages.resolve(name)
            out.append(await _hello_check(engine, f"language {name}", name, cls.hello, lang.version))
            if cls.libraries_hello is not None:
                out.append(await _hello_check(engine, f"libraries {name}", name, cls.libraries_hello,
                                              "MultiPL-E's test libraries load"))
        present = set(engine.languages())
        for cls in languages.SERVED:
            if cls.name not in present:
                out.append(Check(f"language {cls.name}", False, f"skipped: toolchain not installed ({cls.version_argv[0]}; "
                                                               "scripts/setup.sh installs docker/sandbox-apt.txt)"))
        out.append(runtime_missing() or await _runtime_check(engine))
    return out


async def _hello_check(engine: Engine, label: str, language: str, code: str, detail: str) -> Check:
    """``code`` must compile and print "hello, coderl" in a real slot (a test runner prints its
    report around it)."""
    ex = await engine.execute(Program(language, code), [b""], Limits(cpu_s=10, wall_s=20, memory_mb=512))
    result = ex.results[0]
    printed = result.stdout.strip() == b"hello, coderl" or (
        languages.resolve(language).test_runner and b"hello, coderl\n" in result.stdout)
    ok = ex.compiled and result.ok and printed
    if not ok:
        detail = (ex.compile.message[:200] if ex.compile and not ex.compile.ok
                  else f"{result.status}: {result.stderr[:200]!r}")
    return Check(label, ok, detail)


def runtime_missing() -> Check | None:
    """The skip line when no runtime environment is built (programs then get the bare interpreter)."""
    if runtime_prefix() is not None:
        return None
    return Check("runtime environment", False, f"skipped: not built ({DEFAULT_PREFIX}; scripts/build_runtime.sh "
                                               "builds it, CODERL_RUNTIME_PREFIX names another)")


async def _runtime_check(engine: Engine) -> Check:
    """The pinned runtime environment, imported by real programs in a slot (its packages, its
    node_modules), not just found on disk."""
    prefix = runtime_prefix()
    found = []
    probes = [("python", _RUNTIME_PYTHON)]
    if "javascript" in engine.languages():
        probes.append(("javascript", _RUNTIME_NODE))
    for language, code in probes:
        ex = await engine.execute(Program(language, code), [b""], Limits(cpu_s=20, wall_s=40, memory_mb=1024))
        result = ex.results[0]
        if not (ex.compiled and result.ok):
            return Check("runtime environment", False,
                         f"{prefix}: {language} cannot import it ({result.status}: {result.stderr[-200:]!r})")
        found.append(result.stdout.decode().strip())
    return Check("runtime environment", True, f"{prefix}: {', '.join(found)}")


def report(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = [f"{'ok ' if c.ok else 'NO '} {c.name:<{width}}  {c.detail}" for c in checks]
    return "\n".join(lines)


def as_json(checks: list[Check]) -> list[dict]:
    return [asdict(c) for c in checks]


def _first_line(argv: list[str | None]) -> str:
    try:
        done = subprocess.run([a for a in argv if a], capture_output=True, text=True, timeout=10)
        return (done.stdout or done.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


def essential_ok(checks: list[Check]) -> bool:
    """Isolation holds (languages, their test libraries and the runtime environment may be missing
    without failing the doctor)."""
    return all(c.ok for c in checks if not c.name.startswith(("language ", "libraries ", "cgroups", "runtime ")))


__all__ = ["Check", "as_json", "essential_ok", "report", "run_checks"]
