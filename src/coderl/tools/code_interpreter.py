"""`code_interpreter` for verl's multi-turn tool agent loop: runs the model's code in the sandbox.

Named in a tool YAML (tool_config/code_interpreter.yaml) as
``class_name: coderl.tools.code_interpreter.CodeInterpreterTool``. Construction does no I/O
(verl builds tools in every worker and in the dataset); the HTTP client is created on first use in
the running event loop. Each call is one stateless run: the model sees a short status line, then
stdout and stderr, each cut in the middle past ``max_output_chars``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from coderl.errors import CoderlError

DEFAULT_SCHEMA = {
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


class CodeInterpreterTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        schema = tool_schema or OpenAIFunctionToolSchema.model_validate(DEFAULT_SCHEMA)
        super().__init__(config, schema)
        self.sandbox_url = config.get("sandbox_url") or os.environ.get("CODERL_SANDBOX_URL") or ""
        self.default_timeout_s = float(config.get("default_timeout", 10))
        self.max_timeout_s = float(config.get("max_timeout", 30))
        self.memory_mb = int(config.get("memory_mb", 1024))
        self.max_output_chars = int(config.get("max_output_chars", 4000))
        self.retries = int(config.get("retries", 3))
        self._clients: dict[int, Any] = {}

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return self.tool_schema

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        code = parameters.get("code")
        if not isinstance(code, str) or not code.strip():
            return ToolResponse(text="error: `code` must be a non-empty string"), 0.0, {"tool_error": 1}
        language = str(parameters.get("language") or "python")
        try:
            timeout = float(parameters.get("timeout") or self.default_timeout_s)
        except (TypeError, ValueError):
            timeout = self.default_timeout_s
        timeout = min(max(timeout, 0.1), self.max_timeout_s)
        limits = {"cpu_s": timeout, "wall_s": timeout * 2, "memory_mb": self.memory_mb}
        try:
            reply = await self._client().run(language, code, parameters.get("stdin") or "", limits)
        except CoderlError as exc:
            return ToolResponse(text=f"status: sandbox unavailable ({exc})"), 0.0, {"tool_error": 1, "sandbox_error": 1}
        text, metrics = render(reply, self.max_output_chars)
        return ToolResponse(text=text), 0.0, metrics

    def _client(self) -> Any:
        from coderl.client import SandboxClient

        if not self.sandbox_url:
            raise CoderlError("no sandbox_url configured for code_interpreter (tool config or CODERL_SANDBOX_URL)")
        loop = id(asyncio.get_running_loop())
        if loop not in self._clients:
            self._clients[loop] = SandboxClient(self.sandbox_url.split(","), retries=self.retries)
        return self._clients[loop]


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
