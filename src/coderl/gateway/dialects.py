"""The two wire dialects an agent harness speaks, to and from the gateway's canonical messages:
OpenAI Chat Completions and Anthropic Messages, each whole or as server-sent events.

Streams are produced after the turn is generated (the backend is token-level, not incremental):
a harness that asks for ``stream: true`` gets a well-formed event stream of the whole answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from coderl.gateway.chat import AssistantTurn, new_call_id

# ---------------------------------------------------------------- OpenAI Chat Completions


def openai_tools(tools: Any) -> list[dict[str, Any]] | None:
    if not tools:
        return None
    if not isinstance(tools, list):
        raise ValueError("tools must be a list")
    return [{"type": "function", "function": t["function"]} if isinstance(t, dict) and "function" in t else t
            for t in tools]


def openai_response(turn: AssistantTurn, model: str) -> dict[str, Any]:
    return {"id": "chatcmpl-" + new_call_id("")[:16], "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": turn.message(), "logprobs": None, "finish_reason": turn.finish_reason}],
            "usage": {"prompt_tokens": turn.prompt_tokens, "completion_tokens": turn.completion_tokens,
                      "total_tokens": turn.prompt_tokens + turn.completion_tokens}}


def openai_stream(turn: AssistantTurn, model: str) -> Iterator[str]:
    base = {"id": "chatcmpl-" + new_call_id("")[:16], "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return "data: " + json.dumps({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                            "finish_reason": finish}], **extra}) + "\n\n"

    yield chunk({"role": "assistant", "content": ""})
    if turn.reasoning is not None:
        yield chunk({"reasoning_content": turn.reasoning})
    if turn.content:
        yield chunk({"content": turn.content})
    for i, call in enumerate(turn.tool_calls):
        yield chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"], "arguments": ""}}]})
        yield chunk({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]})
    usage = {"prompt_tokens": turn.prompt_tokens, "completion_tokens": turn.completion_tokens,
             "total_tokens": turn.prompt_tokens + turn.completion_tokens}
    yield chunk({}, turn.finish_reason, usage=usage)
    yield "data: [DONE]\n\n"


def openai_error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code}}


# ---------------------------------------------------------------- Anthropic Messages


def anthropic_tools(tools: Any) -> list[dict[str, Any]] | None:
    if not tools:
        return None
    if not isinstance(tools, list):
        raise ValueError("tools must be a list")
    out = []
    for t in tools:
        if not isinstance(t, dict) or "name" not in t:
            raise ValueError("each Anthropic tool needs a name")
        out.append({"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                     "parameters": t.get("input_schema", {"type": "object"})}})
    return out


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, list):
        return "".join(_block_text(b) for b in block)
    if isinstance(block, dict) and block.get("type") == "text":
        return str(block.get("text", ""))
    raise ValueError(f"unsupported content block {block.get('type') if isinstance(block, dict) else block!r}")


def anthropic_messages(system: Any, messages: Any) -> list[dict[str, Any]]:
    """Anthropic request -> canonical messages (tool results become ``tool`` messages)."""
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": _block_text(system)})
    for msg in messages:
        role, content = msg.get("role"), msg.get("content")
        if role not in ("user", "assistant"):
            raise ValueError(f"Anthropic message roles are user/assistant, got {role!r}")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if role == "user":
            texts = []
            for b in blocks:
                if b.get("type") == "tool_result":
                    out.append({"role": "tool", "tool_call_id": b.get("tool_use_id"),
                                "content": _block_text(b.get("content", ""))})
                else:
                    texts.append(_block_text(b))
            if texts:
                out.append({"role": "user", "content": "".join(texts)})
        else:
            turn: dict[str, Any] = {"role": "assistant", "content": ""}
            calls = []
            for b in blocks:
                kind = b.get("type")
                if kind == "thinking":
                    turn["reasoning_content"] = b.get("thinking", "")
                elif kind == "redacted_thinking":
                    continue
                elif kind == "text":
                    turn["content"] += b.get("text", "")
                elif kind == "tool_use":
                    calls.append({"id": b.get("id"), "type": "function",
                                  "function": {"name": b.get("name", ""), "arguments": json.dumps(b.get("input", {}))}})
                else:
                    raise ValueError(f"unsupported assistant content block {kind!r}")
            if calls:
                turn["tool_calls"] = calls
            out.append(turn)
    return out


_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _anthropic_blocks(turn: AssistantTurn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        blocks.append({"type": "thinking", "thinking": turn.reasoning, "signature": ""})
    if turn.content or not turn.tool_calls:
        blocks.append({"type": "text", "text": turn.content})
    for call in turn.tool_calls:
        try:
            args = json.loads(call["function"]["arguments"])
        except ValueError:
            args = {"_raw": call["function"]["arguments"]}
        blocks.append({"type": "tool_use", "id": "toolu_" + call["id"].removeprefix("call_"),
                       "name": call["function"]["name"], "input": args})
    return blocks


def anthropic_response(turn: AssistantTurn, model: str) -> dict[str, Any]:
    return {"id": "msg_" + new_call_id("")[:20], "type": "message", "role": "assistant", "model": model,
            "content": _anthropic_blocks(turn), "stop_reason": _STOP[turn.finish_reason], "stop_sequence": None,
            "usage": {"input_tokens": turn.prompt_tokens, "output_tokens": turn.completion_tokens}}


def anthropic_stream(turn: AssistantTurn, model: str) -> Iterator[str]:
    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"

    whole = anthropic_response(turn, model)
    yield event("message_start", {"message": {**whole, "content": [], "stop_reason": None,
                                              "usage": {"input_tokens": turn.prompt_tokens, "output_tokens": 0}}})
    for i, block in enumerate(whole["content"]):
        if block["type"] == "text":
            yield event("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}})
            yield event("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": block["text"]}})
        elif block["type"] == "thinking":
            yield event("content_block_start", {"index": i, "content_block": {"type": "thinking", "thinking": ""}})
            yield event("content_block_delta", {"index": i, "delta": {"type": "thinking_delta",
                                                                      "thinking": block["thinking"]}})
        else:
            yield event("content_block_start", {"index": i, "content_block": {**block, "input": {}}})
            yield event("content_block_delta", {"index": i, "delta": {"type": "input_json_delta",
                                                                      "partial_json": json.dumps(block["input"])}})
        yield event("content_block_stop", {"index": i})
    yield event("message_delta", {"delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                                  "usage": {"output_tokens": turn.completion_tokens}})
    yield event("message_stop", {})


def anthropic_error(message: str, kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}

