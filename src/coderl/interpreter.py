"""The `code_interpreter` tool, free of verl imports: its schema, its defaults, one call (validate
the model's arguments, clamp the timeout, run, map errors) and how a run is shown to the model.
The verl tool (training, `coderl.verl.tool`) and the multi-turn evaluator (`eval/agent.py`)
both call `call_interpreter`, so what the model sees cannot drift between them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from coderl.errors import BadRequest, CoderlError


class CodeRunner(Protocol):
    """What runs the code: `coderl.client.SandboxClient` or anything with its ``run``."""

    async def run(self, language: str, code: str, stdin: str, limits: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class InterpreterSettings:
    """The tool's limits; the defaults are tool_config/code_interpreter.yaml's (a test holds them
    equal). ``max_output_chars``: stdout is cut in the middle past it, stderr past half of it."""

    default_timeout_s: float = 10.0  # seconds of CPU when the model gives none; wall clock is twice that
    max_timeout_s: float = 30.0  # the most a call may ask for
    memory_mb: int = 1024
    max_output_chars: int = 560

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> InterpreterSettings:
        """From the tool YAML's ``config`` keys (``default_timeout``, ``max_timeout``, ``memory_mb``,
        ``max_output_chars``); absent keys keep the defaults."""
        d = cls()
        return cls(default_timeout_s=float(config.get("default_timeout", d.default_timeout_s)),
                   max_timeout_s=float(config.get("max_timeout", d.max_timeout_s)),
                   memory_mb=int(config.get("memory_mb", d.memory_mb)),
                   max_output_chars=int(config.get("max_output_chars", d.max_output_chars)))


async def call_interpreter(sandbox: CodeRunner, args: dict[str, Any],
                           settings: InterpreterSettings = InterpreterSettings()) -> tuple[str, dict[str, Any]]:
    """One tool call: the text the model sees and the call's metrics. A request the sandbox
    rejects (no code, an unknown language) is ``error: ...`` for the model to fix; a sandbox that
    cannot be reached is a status line saying it is not the program's fault (``sandbox_error``)."""
    code = args.get("code")
    if not isinstance(code, str) or not code.strip():
        return "error: `code` must be a non-empty string", {"tool_error": 1}
    try:
        timeout = float(args.get("timeout") or settings.default_timeout_s)
    except (TypeError, ValueError):
        timeout = settings.default_timeout_s
    timeout = min(max(timeout, 0.1), settings.max_timeout_s)
    limits = {"cpu_s": timeout, "wall_s": timeout * 2, "memory_mb": settings.memory_mb}
    try:
        reply = await sandbox.run(str(args.get("language") or "python"), code, "", limits)
    except BadRequest as exc:
        return f"error: {exc}", {"tool_error": 1}
    except CoderlError as exc:
        return f"status: sandbox unavailable ({exc})", {"tool_error": 1, "sandbox_error": 1}
    return render(reply, settings.max_output_chars)

CODE_INTERPRETER_SCHEMA = {
    "type": "function",
    "function": {
        "name": "code_interpreter",
        "description": "Run a program in a sandbox and see its output. Python by default; state is not kept "
                       "between calls. Print what you want to see.",
        "parameters": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "the complete program to run"},
                "language": {"type": "string", "description": "python (default), cpp, c, java, javascript, go, rust"},
                "timeout": {"type": "number", "description": "seconds, at most the configured maximum"},
            },
            "required": ["code"],
        },
    },
}


def render(reply: dict[str, Any], max_chars: int) -> tuple[str, dict[str, Any]]:
    """The text the model sees for a /v1/run reply, and the call's metrics."""
    compile_info = reply.get("compile")
    if compile_info and not compile_info.get("ok", True):
        return f"status: compile error\n{_cut(compile_info.get('message', ''), max_chars)}", {"status": "compile_error"}
    run = reply["run"]
    status = run["status"]
    line = {
        "ok": "status: ok",
        "runtime_error": f"status: runtime error ({run.get('message') or 'exit code ' + str(run.get('exit_code'))})",
        "time_limit": f"status: time limit exceeded ({run.get('time_limit_kind') or 'cpu'})",
        "memory_limit": "status: memory limit exceeded",
        "output_limit": "status: output limit exceeded",
        "sandbox_error": "status: sandbox error (not your program's fault)",
    }.get(status, f"status: {status}")
    parts = [line]
    if run.get("stdout"):
        parts.append("stdout:\n" + _cut(run["stdout"], max_chars))
    if run.get("stderr"):
        parts.append("stderr:\n" + _cut(run["stderr"], max_chars // 2))
    if not run.get("stdout") and not run.get("stderr"):
        parts.append("(no output)")
    return "\n".join(parts), {"status": status, "wall_s": run.get("wall_s", 0.0)}


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters cut] ...\n{text[-half:]}"
