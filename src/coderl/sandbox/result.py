"""The records the engine returns: one `RunResult` per program run (the runner's `RunRecord`,
defined with its field table in run_record.py, plus the captured bytes), the compile step's
outcome, and a submission's `Execution`. Field names are the JSON API's.

| field              | meaning                                                                       |
|--------------------|-------------------------------------------------------------------------------|
| stdout / stderr    | captured bytes, cut at the output limit                                       |
| files              | files fetched from the work dir after the run (RunInput.fetch)                |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coderl.sandbox.run_record import WIRE_FIELDS, Limits, RunRecord, RunStatus

__all__ = ["CompileResult", "ExecResult", "Execution", "Limits", "RunResult", "RunStatus"]


@dataclass(frozen=True, kw_only=True)
class RunResult(RunRecord):
    stdout: bytes = b""
    stderr: bytes = b""
    files: dict[str, bytes] = field(default_factory=dict)  # fetched from the work dir (or /mnt) after the run

    @classmethod
    def from_frame(cls, header: dict[str, Any], stdout: bytes, stderr: bytes, *fetched: bytes) -> RunResult:
        """The runner's frame for one run: the record in its header, then the output and the
        fetched files' bytes."""
        files = dict(zip(header.get("fetch_names", []), fetched, strict=True))
        return cls.from_wire(header, stdout=stdout, stderr=stderr, files=files)

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


@dataclass(frozen=True, kw_only=True)
class ExecResult(RunRecord):
    """One command of an agent session (``Session.exec``): the same record as a judged run, its
    outputs decoded with replacement. ``exit_code`` is None when a signal ended it (``signal``: 9
    after a time-out, an output flood or an out-of-memory kill). ``ok`` (from `RunRecord`) means
    status ok: exited 0 and no limit hit; a caller that only asks "did it exit 0" says so."""

    stdout: str = ""
    stderr: str = ""

    @classmethod
    def of_command(cls, *, exit_code: int | None, signal: int | None, timed_out: bool = False,
                   oom_killed: bool = False, output_limit: bool = False, **fields: Any) -> ExecResult:
        """The record of a command from what the session's PID 1 and its cgroup saw, in the order
        a grader reads them: its time-out, then an out-of-memory kill, then the output flood it was
        killed for, then its own exit."""
        if timed_out:
            status, kind, message = RunStatus.TIME_LIMIT, "wall", "the command's timeout passed"
        elif oom_killed:
            status, kind, message = RunStatus.MEMORY_LIMIT, None, "the episode's memory limit killed a process"
        elif output_limit:
            status, kind, message = RunStatus.OUTPUT_LIMIT, None, "killed for printing far more than is kept"
        elif signal is not None:
            status, kind, message = RunStatus.RUNTIME_ERROR, None, f"killed by signal {signal}"
        elif exit_code != 0:
            status, kind, message = RunStatus.RUNTIME_ERROR, None, f"exit code {exit_code}"
        else:
            status, kind, message = RunStatus.OK, None, ""
        return cls(status=status, time_limit_kind=kind, message=message, exit_code=exit_code, signal=signal,
                   **fields)

    @property
    def timed_out(self) -> bool:
        return self.status is RunStatus.TIME_LIMIT

    @property
    def oom_killed(self) -> bool:
        return self.status is RunStatus.MEMORY_LIMIT

    @property
    def output_limit(self) -> bool:
        """Killed for printing far more than is kept (``stdout_truncated`` alone: output was cut)."""
        return self.status is RunStatus.OUTPUT_LIMIT


STOPPED = "stopped after an earlier failure"  # a skipped record's message once a stop rule fired (as the runner's)

_CUT = WIRE_FIELDS.index("stdout_truncated")  # the JSON API's order (docs/api.md): output before its flags
_RECORD_FIELDS = (*WIRE_FIELDS[:_CUT], "stdout", "stderr", *WIRE_FIELDS[_CUT:])


@dataclass(frozen=True, kw_only=True)
class CompileResult:
    """Outcome of the compile step (absent for interpreted languages that need none)."""

    ok: bool
    run: RunResult  # the compiler's own run record: its stderr holds the diagnostics
    sandbox_error: bool = False  # the compiler could not run at all: our fault
    cached: bool = False  # the artifacts came from the compile cache: no compiler ran (0 s)

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
