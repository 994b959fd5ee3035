"""Multi-turn evaluation with the `code_interpreter` tool, as in training: the model may run code
in the sandbox between turns; the transcript keeps training's shape (tool calls and tool responses
in tags), so the final answer is found the same way the reward finds it."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from coderl.client import SandboxClient
from coderl.errors import CoderlError
from coderl.eval.backends import OpenAIBackend, Sampling
from coderl.tools.schema import CODE_INTERPRETER_SCHEMA, render

_TEXT_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


async def run_with_tools(backend: OpenAIBackend, http: httpx.AsyncClient, sandbox: SandboxClient,
                         messages: list[dict[str, Any]], sampling: Sampling, max_turns: int) -> tuple[str, int]:
    """The whole transcript (assistant turns, tool calls, tool responses) and the tool calls made."""
    messages = list(messages)
    transcript: list[str] = []
    calls_made = 0
    for _turn in range(max_turns):
        reply = await backend.chat(http, messages, sampling, tools=[CODE_INTERPRETER_SCHEMA])
        message = reply["message"]
        content = message.get("content") or ""
        calls = _calls(message, content)
        transcript.append(content)
        messages.append({"role": "assistant", "content": content,
                         **({"tool_calls": message["tool_calls"]} if message.get("tool_calls") else {})})
        if not calls:
            break
        for call_id, args in calls:
            calls_made += 1
            text = await _execute(sandbox, args)
            transcript.append(f"<tool_call>\n{json.dumps({'name': 'code_interpreter', 'arguments': args})}\n</tool_call>")
            transcript.append(f"<tool_response>\n{text}\n</tool_response>")
            messages.append({"role": "tool", "content": text, **({"tool_call_id": call_id} if call_id else {})})
    return "\n".join(transcript), calls_made


def _calls(message: dict[str, Any], content: str) -> list[tuple[str | None, dict[str, Any]]]:
    out: list[tuple[str | None, dict[str, Any]]] = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        try:
            args = json.loads(fn.get("arguments") or "{}") if isinstance(fn.get("arguments"), str) else fn.get("arguments")
        except json.JSONDecodeError:
            args = {}
        out.append((call.get("id"), args if isinstance(args, dict) else {}))
    if not out:  # hermes text format from a server without a tool parser
        for raw in _TEXT_CALL.findall(content):
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if isinstance(parsed, dict) and isinstance(parsed.get("arguments"), dict):
                out.append((None, parsed["arguments"]))
    return out


async def _execute(sandbox: SandboxClient, args: dict[str, Any]) -> str:
    code = args.get("code")
    if not isinstance(code, str) or not code.strip():
        return "error: `code` must be a non-empty string"
    try:
        reply = await sandbox.run(str(args.get("language") or "python"), code)
    except CoderlError as exc:
        return f"status: sandbox unavailable ({exc})"
    return render(reply, 4000)[0]
