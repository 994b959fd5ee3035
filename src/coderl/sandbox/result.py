"""The records the engine returns: one `RunResult` per program run, like isolate's meta file.

Field names are the JSON API's. A field that does not apply is ``None``.

| field              | meaning                                                                       |
|--------------------|-------------------------------------------------------------------------------|
| status             | ok, runtime_error, time_limit, memory_limit, output_limit, sandbox_error, skipped |
| exit_code          | exit status when the process exited on its own                                |
| signal             | number of the signal that killed it                                          |
| time_limit_kind    | "cpu" or "wall" when status is time_limit                                     |
| cpu_s / wall_s     | CPU seconds (user+sys, all threads and reaped children) / wall seconds        |
| memory_kb          | peak resident set size in KiB                                                 |
| stdout / stderr    | captured bytes, cut at the output limit                                       |
| stdout_truncated   | output went past the limit (status is then output_limit for stdout)           |
| message            | human text: why a sandbox error happened, which limit hit, ...                |
| files              | files fetched from the work dir or /mnt after the run (RunInput.fetch)       |

``sandbox_error`` is ours, never the program's fault: callers retry or drop it, never score it.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any


class RunStatus(enum.StrEnum):
    OK = "ok"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    SANDBOX_ERROR = "sandbox_error"
    SKIPPED = "skipped"  # not run: stopped at first failure or total time budget spent


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Per-run resource limits. Units are in the names; every field has a safe default.

    >>> Limits(cpu_s=2.0, memory_mb=256)
    """

    cpu_s: float = 6.0
    wall_s: float = 12.0
    memory_mb: int = 1024
    max_processes: int = 64
    stdout_kb: int = 64 * 1024
    stderr_kb: int = 1024
    file_size_kb: int = 64 * 1024
    open_files: int = 256

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"limit {f.name} must be a positive number, got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> Limits:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class RunResult:
    status: RunStatus
    exit_code: int | None = None
    signal: int | None = None
    time_limit_kind: str | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0
    memory_kb: int = 0
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    message: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # fetched from the work dir (or /mnt) after the run

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.OK

    @classmethod
    def sandbox_error(cls, message: str) -> RunResult:
        return cls(status=RunStatus.SANDBOX_ERROR, message=message)

    @classmethod
    def skipped(cls, message: str) -> RunResult:
        return cls(status=RunStatus.SKIPPED, message=message)

    def to_dict(self, *, text: bool = True) -> dict[str, Any]:
        """JSON-ready dict; output bytes decoded as UTF-8 with replacement when ``text``. Every
        field but ``files`` is a scalar or bytes, so no ``dataclasses.asdict`` (a deep copy, and
        a hot spot of the judge API)."""
        data = {name: getattr(self, name) for name in _RECORD_FIELDS}
        data["status"] = self.status.value
        if text:
            data["stdout"] = self.stdout.decode("utf-8", "replace")
            data["stderr"] = self.stderr.decode("utf-8", "replace")
        return data


_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(RunResult) if f.name != "files")


@dataclass(frozen=True, kw_only=True)
class CompileResult:
    """Outcome of the compile step (absent for interpreted languages that need none)."""

    ok: bool
    run: RunResult  # the compiler's own run record: its stderr holds the diagnostics
    sandbox_error: bool = False  # the compiler could not run at all: our fault

    @property
    def message(self) -> str:
        """The compiler's diagnostics; when a limit stopped the compiler itself, that first (its
        output alone would not say why the compile failed)."""
        text = self.run.stderr.decode("utf-8", "replace") or self.run.stdout.decode("utf-8", "replace")
        if self.run.status in (RunStatus.TIME_LIMIT, RunStatus.MEMORY_LIMIT, RunStatus.OUTPUT_LIMIT):
            return f"compiler stopped: {self.run.message}\n{text}".rstrip()
        return text


@dataclass(frozen=True, kw_only=True)
class Execution:
    """Everything that happened to one submission: compile once, then one record per input."""

    language: str
    isolation: str  # "bwrap" or "none" (then loudly reported by every caller)
    compile: CompileResult | None
    results: list[RunResult] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def compiled(self) -> bool:
        return self.compile is None or self.compile.ok
