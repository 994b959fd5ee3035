"""`code_interpreter` for verl's multi-turn tool agent loop: runs the model's code in the sandbox.

Named in a tool YAML (tool_config/code_interpreter.yaml) as
``class_name: coderl.tools.code_interpreter.CodeInterpreterTool``. Construction does no I/O
(verl builds tools in every worker and in the dataset); the HTTP client is created on first use in
the running event loop. Each call is one stateless run: the model sees a short status line, then
stdout and stderr, each cut in the middle past ``max_output_chars``. A request the sandbox
rejects (unknown language, code too large) comes back as ``error: ...`` for the model to fix; an
unreachable sandbox (after the client's retries) as a status line that says it is not the
program's fault, with ``sandbox_error`` in the call's metrics.

Config keys (tool YAML): ``sandbox_url`` (comma-separated replicas; default ``CODERL_SANDBOX_URL``),
``default_timeout``, ``max_timeout`` (seconds of CPU; wall clock is twice that), ``memory_mb``,
``max_output_chars``, ``retries``.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from coderl.errors import BadRequest, CoderlError
from coderl.tools.schema import CODE_INTERPRETER_SCHEMA, render


class CodeInterpreterTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        schema = tool_schema or OpenAIFunctionToolSchema.model_validate(CODE_INTERPRETER_SCHEMA)
        super().__init__(config, schema)
        self.sandbox_url = config.get("sandbox_url") or os.environ.get("CODERL_SANDBOX_URL") or ""
        self.default_timeout_s = float(config.get("default_timeout", 10))
        self.max_timeout_s = float(config.get("max_timeout", 30))
        self.memory_mb = int(config.get("memory_mb", 1024))
        self.max_output_chars = int(config.get("max_output_chars", 4000))
        self.retries = int(config.get("retries", 3))
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

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
            reply = await self._client().run(language, code, "", limits)
        except BadRequest as exc:
            return ToolResponse(text=f"error: {exc}"), 0.0, {"tool_error": 1}
        except CoderlError as exc:
            return ToolResponse(text=f"status: sandbox unavailable ({exc})"), 0.0, {"tool_error": 1, "sandbox_error": 1}
        text, metrics = render(reply, self.max_output_chars)
        return ToolResponse(text=text), 0.0, metrics

    def _client(self) -> Any:
        from coderl.client import SandboxClient

        if not self.sandbox_url:
            raise CoderlError("no sandbox_url configured for code_interpreter (tool config or CODERL_SANDBOX_URL)")
        loop = asyncio.get_running_loop()  # one client per event loop: httpx clients are bound to theirs
        if loop not in self._clients:
            self._clients[loop] = SandboxClient(self.sandbox_url.split(","), retries=self.retries)
        return self._clients[loop]
