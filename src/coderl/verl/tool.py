"""`code_interpreter` for verl's multi-turn tool agent loop: runs the model's code in the sandbox.

Named in a tool YAML (tool_config/code_interpreter.yaml) as
``class_name: coderl.verl.tool.CodeInterpreterTool``. Construction does no I/O
(verl builds tools in every worker and in the dataset); the HTTP client is created on first use in
the running event loop. Each call is one stateless run: the model sees a short status line, then
stdout and stderr, each cut in the middle past ``max_output_chars``. A request the sandbox
rejects (unknown language, code too large) comes back as ``error: ...`` for the model to fix; an
unreachable sandbox (after the client's retries) as a status line that says it is not the
program's fault, with ``sandbox_error`` in the call's metrics.

Config keys (tool YAML): ``sandbox_url`` (comma-separated replicas; default ``CODERL_SANDBOX_URL``),
``retries``, and the limits of `coderl.interpreter.InterpreterSettings` (``default_timeout``,
``max_timeout``, ``memory_mb``, ``max_output_chars``), whose defaults the YAML repeats. The call
itself (validation, clamping, error mapping) is `coderl.interpreter.call_interpreter`, shared with
the evaluator.

Each call's sandbox request and result (status, what the model saw, time) is appended to the
trajectory's ``agent_data.extra_fields["extras"]["coderl_tool_runs"]``: verl merges extra_fields
into the reward's ``extra_info``, and the reward writes them into the sample's record
(`coderl.records.code`). ``extras`` is one of the keys verl 0.9.1 gives EVERY sample of a batch
(agent_loop.py's default extra keys): a key only some samples had would make the workers'
batches fail to concatenate.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from coderl.errors import CoderlError
from coderl.interpreter import CODE_INTERPRETER_SCHEMA, InterpreterSettings, call_interpreter
from coderl.records.code import TOOL_RUNS_KEY, tool_run


class CodeInterpreterTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        schema = tool_schema or OpenAIFunctionToolSchema.model_validate(CODE_INTERPRETER_SCHEMA)
        super().__init__(config, schema)
        self.sandbox_url = config.get("sandbox_url") or os.environ.get("CODERL_SANDBOX_URL") or ""
        self.settings = InterpreterSettings.from_config(config)
        self.retries = int(config.get("retries", 3))
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return self.tool_schema

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        started = time.monotonic()
        text, metrics = await call_interpreter(self, parameters, self.settings)
        agent_data = kwargs.get("agent_data")
        if agent_data is not None:  # the trajectory's record (verl hands extra_fields to the reward)
            extras = agent_data.extra_fields.get("extras") or {}
            extras.setdefault(TOOL_RUNS_KEY, []).append(tool_run(parameters, text, metrics, time.monotonic() - started))
            agent_data.extra_fields["extras"] = extras
        return ToolResponse(text=text), 0.0, metrics

    async def run(self, language: str, code: str, stdin: str, limits: dict[str, Any]) -> dict[str, Any]:
        """The sandbox service's /v1/run, through this event loop's client."""
        return await self._client().run(language, code, stdin, limits)  # type: ignore[no-any-return]

    def _client(self) -> Any:
        from coderl.client import SandboxClient

        if not self.sandbox_url:
            raise CoderlError("no sandbox_url configured for code_interpreter (tool config or CODERL_SANDBOX_URL)")
        loop = asyncio.get_running_loop()  # one client per event loop: httpx clients are bound to theirs
        if loop not in self._clients:
            self._clients[loop] = SandboxClient(self.sandbox_url.split(","), retries=self.retries)
        return self._clients[loop]
