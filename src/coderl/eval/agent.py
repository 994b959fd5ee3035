"""Multi-turn evaluation with the `code_interpreter` tool, as in training: the model may run code in
the sandbox between turns (the verl tool's own call, `coderl.interpreter.call_interpreter`, with
its defaults, which tool_config/code_interpreter.yaml repeats); the transcript keeps training's shape (tool calls and tool
responses in tags), so the final answer is found the way the reward finds it."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from coderl.data.prompts import TOOL_SYSTEM_PROMPT
from coderl.eval.backends import ChatBackend, Completion, Item
from coderl.gateway.chat import TOOL_CALL
from coderl.interpreter import CODE_INTERPRETER_SCHEMA, CodeRunner, InterpreterSettings, call_interpreter


def tool_prompt(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The problem's messages with training's tool system prompt in place of the plain one."""
    return [{"role": "system", "content": TOOL_SYSTEM_PROMPT}] + [m for m in messages if m.get("role") != "system"]


class ToolAgent:
    per_sample = True

    def __init__(self, backend: ChatBackend, sandbox: CodeRunner, max_turns: int,
                 settings: InterpreterSettings = InterpreterSettings()) -> None:
        self.backend = backend
        self.sandbox = sandbox
        self.max_turns = max_turns
        self.settings = settings  # training's defaults (tool_config/code_interpreter.yaml)

    async def generate(self, items: list[Item]) -> list[Completion]:
        return list(await asyncio.gather(*(self.episode(tool_prompt(p["prompt"])) for p, _ in items)))

    async def episode(self, messages: list[dict[str, Any]]) -> Completion:
        """Chat until the model answers without a tool call or the turn limit is reached."""
        started = time.monotonic()
        messages = list(messages)
        transcript: list[str] = []
        calls_made = 0
        finish = None
        for _turn in range(self.max_turns):
            reply = await self.backend.chat(messages, tools=[CODE_INTERPRETER_SCHEMA])
            message, finish = reply["message"], reply["finish_reason"]
            content = message.get("content") or ""
            calls = _calls(message, content)
            transcript.append(content)
            messages.append({"role": "assistant", "content": content,
                             **({"tool_calls": message["tool_calls"]} if message.get("tool_calls") else {})})
            if not calls or finish == "length":
                break
            for call_id, args in calls:
                calls_made += 1
                text = await self._execute(args)
                if message.get("tool_calls"):  # structured calls: put them in the transcript as text
                    transcript.append(f"<tool_call>\n{json.dumps({'name': 'code_interpreter', 'arguments': args})}\n</tool_call>")
                transcript.append(f"<tool_response>\n{text}\n</tool_response>")
                messages.append({"role": "tool", "content": text, **({"tool_call_id": call_id} if call_id else {})})
        return Completion("\n".join(transcript), finish, calls_made, round(time.monotonic() - started, 3))

    async def _execute(self, args: dict[str, Any]) -> str:
        return (await call_interpreter(self.sandbox, args, self.settings))[0]


def _calls(message: dict[str, Any], content: str) -> list[tuple[str | None, dict[str, Any]]]:
    """Structured tool calls, or hermes ``<tool_call>{json}</tool_call>`` text from a server
    without a tool parser."""
    out: list[tuple[str | None, dict[str, Any]]] = []
    for call in message.get("tool_calls") or []:
        raw = (call.get("function") or {}).get("arguments")
        try:
            args = json.loads(raw or "{}") if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            args = {}
        out.append((call.get("id"), args if isinstance(args, dict) else {}))
    if not out:
        for raw in TOOL_CALL.findall(content):
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if isinstance(parsed, dict) and isinstance(parsed.get("arguments"), dict):
                out.append((None, parsed["arguments"]))
    return out
