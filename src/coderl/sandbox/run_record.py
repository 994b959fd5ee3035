"""The limits of a program run and its one record, like isolate's meta file (stdlib only: the runner inside the
sandbox fills it, the engine reads it back from the frame's JSON header, and `RunResult` adds the
captured bytes to it).

| field              | meaning                                                                       |
|--------------------|-------------------------------------------------------------------------------|
| status             | ok, runtime_error, time_limit, memory_limit, output_limit, sandbox_error, skipped |
| exit_code          | exit status when the process exited on its own                                |
| signal             | number of the signal that killed it                                           |
| time_limit_kind    | "cpu" or "wall" when status is time_limit                                     |
| cpu_s / wall_s     | CPU seconds (user+sys, all threads and reaped children) / wall seconds        |
| memory_kb          | peak resident set size in KiB                                                 |
| stdout_truncated   | output went past the limit (status is then output_limit for stdout)           |
| stderr_truncated   | stderr went past its own limit (never a verdict of its own)                   |
| message            | human text: why a sandbox error happened, which limit hit, ...                |

A field that does not apply is ``None``. ``sandbox_error`` is ours, never the program's fault:
callers retry or drop it, never score it.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any, Self


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
        """The limits as the frames carry them to the runner (`from_dict` reads them back)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls(**data)

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    status: RunStatus
    exit_code: int | None = None
    signal: int | None = None
    time_limit_kind: str | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0
    memory_kb: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    message: str = ""

    @property
    def ok(self) -> bool:
        """Status ok: the program exited 0 and hit no limit (a caller that means "exited 0" says
        ``exit_code == 0``)."""
        return self.status is RunStatus.OK

    def to_wire(self) -> dict[str, Any]:
        """The frame header's fields (a StrEnum status is its string in JSON)."""
        return {name: getattr(self, name) for name in WIRE_FIELDS}

    @classmethod
    def from_wire(cls, header: dict[str, Any], **extra: Any) -> Self:
        """The record a frame header carries (its other keys are the frame's own); ``extra`` fills
        a subclass's fields, e.g. `RunResult`'s output bytes."""
        fields = {name: header[name] for name in WIRE_FIELDS if name in header}
        return cls(**{**fields, "status": RunStatus(header["status"])}, **extra)


WIRE_FIELDS = tuple(f.name for f in dataclasses.fields(RunRecord))
