"""The `code_interpreter` tool's schema and how a run is shown to the model: shared by the verl
tool (training) and the multi-turn evaluator, and free of verl imports."""

from __future__ import annotations

from typing import Any

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
