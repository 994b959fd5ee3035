"""One small class per language, configured by class attributes (DMOJ style).

A language says how to compile once and how to run many times, what to bind into the sandbox,
and carries a self-test program that `coderl sandbox doctor` runs through the real sandbox.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class LanguageInfo:
    name: str
    version: str
    compiled: bool
    aliases: tuple[str, ...] = ()


class Language:
    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    source_name: ClassVar[str]
    #: argv templates run inside the sandbox, in the work dir /box
    compile_argv: ClassVar[tuple[str, ...] | None] = None
    run_argv: ClassVar[tuple[str, ...]]
    #: files the compile step produces that every run needs (read back and replayed per run)
    artifacts: ClassVar[tuple[str, ...]] = ()
    #: host command printing the toolchain version; its first word must resolve on PATH
    version_argv: ClassVar[tuple[str, ...]]
    env: ClassVar[dict[str, str]] = {}
    #: prints "hello, coderl" and exits 0
    hello: ClassVar[str]
    #: prints "hello, coderl" after loading the test libraries MultiPL-E's tests in this language
    #: load (a missing one fails every submission, right or wrong); the doctor runs it
    libraries_hello: ClassVar[str | None] = None
    warm_python: ClassVar[bool] = False
    #: the program is a test file that the language's test runner runs (SandboxFusion's go_test,
    #: junit, pytest): the runner's exit status is the verdict, so the judge, which brings its own
    #: tests, does not take it; its ``hello`` is a passing test whose output holds "hello, coderl"
    test_runner: ClassVar[bool] = False
    #: memory the runtime itself needs on top of the program's limit (the JVM's metaspace, ...)
    memory_overhead_mb: ClassVar[int] = 0
    #: stderr text by which the runtime reports running out of its heap (a memory-limit verdict)
    memory_error_markers: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def extra_binds(cls) -> tuple[str, ...]:
        """Host paths (besides /usr and the Python install) the toolchain needs read-only, each at
        its own path inside (system directories, which show nothing of the host's users)."""
        return ()

    @classmethod
    def binds(cls) -> tuple[tuple[str, str], ...]:
        """Everything the toolchain needs read-only, as (host path, path inside): ``extra_binds``,
        and what a compiler reuses (``prebuilt``: C++ and the JVM compilers add it, bound where the
        host's cache path does not show)."""
        return tuple((path, path) for path in cls.extra_binds())

    @classmethod
    def available(cls) -> bool:
        return shutil.which(cls.version_argv[0]) is not None

    @classmethod
    def version(cls) -> str:
        try:
            done = subprocess.run(cls.version_argv, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"unknown ({exc})"
        text = (done.stdout or done.stderr).strip().splitlines()
        return text[0] if text else "unknown"

    @classmethod
    def info(cls) -> LanguageInfo:
        return LanguageInfo(cls.name, cls.version(), cls.compile_argv is not None, cls.aliases)

    @classmethod
    def source_for(cls, source: str) -> tuple[str, str]:
        """(file name, source) to write; Java overrides it to name the file after the class."""
        return cls.source_name, source

    @classmethod
    def placeholders(cls, source_name: str, memory_mb: int) -> dict[str, str]:
        """Values for the ``{name}`` fields of the argv templates."""
        return {"src": source_name, "main": source_name.rsplit(".", 1)[0], "memory_mb": str(memory_mb)}

    @classmethod
    def recipe(cls, source_name: str, memory_mb: int) -> dict:
        """What the runner needs to know: plain data, sent over the protocol."""
        fill = cls.placeholders(source_name, memory_mb)
        return {
            "source": source_name,
            "warm_python": cls.warm_python,
            "compile": [a.format(**fill) for a in cls.compile_argv] if cls.compile_argv else None,
            "run": [a.format(**fill) for a in cls.run_argv],
            "artifacts": list(cls.artifacts),
            "memory_error_markers": list(cls.memory_error_markers),
            "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
                    "TMPDIR": "/tmp", **cls.env},
        }
