"""coderl.gateway.dialects on its own: OpenAI Chat Completions and Anthropic Messages requests into the
canonical messages, turns out as whole responses and as event streams that a client reassembles to
the same answer."""

from __future__ import annotations

import json

import pytest

from coderl.gateway.chat import AssistantTurn
from coderl.gateway.dialects import (
    anthropic_error,
    anthropic_messages,
    anthropic_response,
    anthropic_stream,
    anthropic_tools,
    openai_error,
    openai_response,
    openai_stream,
    openai_tools,
)

CALLS = [{"id": "call_abc", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}},
         {"id": "call_def", "type": "function", "function": {"name": "bash", "arguments": "not json"}}]


def turn(content: str = "", reasoning: str | None = None, calls: list | None = None, finish: str = "stop") -> AssistantTurn:
    return AssistantTurn(raw="(raw)", content=content, reasoning=reasoning, tool_calls=calls or [],
                         finish_reason=finish, prompt_tokens=11, completion_tokens=5)


# ------------------------------------------------------------------ OpenAI


def test_openai_tools():
    fn = {"name": "bash", "parameters": {"type": "object"}}
    assert openai_tools(None) is None and openai_tools([]) is None
    assert openai_tools([{"type": "function", "function": fn}, {"function": fn}]) == \
        [{"type": "function", "function": fn}] * 2
    with pytest.raises(ValueError, match="list"):
        openai_tools({"function": fn})


def test_openai_response():
    out = openai_response(turn("Hi.", "why", CALLS[:1], "tool_calls"), "m")
    assert out["object"] == "chat.completion" and out["model"] == "m" and out["id"].startswith("chatcmpl-")
    (choice,) = out["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"] == {"role": "assistant", "content": "Hi.", "reasoning_content": "why",
                                 "tool_calls": CALLS[:1]}
    assert out["usage"] == {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
    assert openai_error("too long", "invalid_request_error", "context_length_exceeded") == \
        {"error": {"message": "too long", "type": "invalid_request_error", "code": "context_length_exceeded"}}


def _openai_events(stream) -> list:
    lines = list(stream)
    assert all(line.startswith("data: ") and line.endswith("\n\n") for line in lines)
    assert lines[-1] == "data: [DONE]\n\n"
    return [json.loads(line[len("data: "):]) for line in lines[:-1]]


def test_openai_stream_reassembles_to_the_response():
    events = _openai_events(openai_stream(turn("Let me see.", "plan", CALLS, "tool_calls"), "m"))
    assert len({e["id"] for e in events}) == 1 and all(e["object"] == "chat.completion.chunk" for e in events)
    content, reasoning, calls = "", "", {}
    for e in events:
        delta = e["choices"][0]["delta"]
        content += delta.get("content") or ""
        reasoning += delta.get("reasoning_content") or ""
        for call in delta.get("tool_calls", []):
            slot = calls.setdefault(call["index"], {"id": None, "name": "", "arguments": ""})
            slot["id"] = call.get("id", slot["id"])
            slot["name"] += call.get("function", {}).get("name", "")
            slot["arguments"] += call["function"]["arguments"]
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    assert (content, reasoning) == ("Let me see.", "plan")
    assert [(c["id"], c["name"], c["arguments"]) for c in calls.values()] == \
        [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in CALLS]
    last = events[-1]
    assert last["choices"][0]["finish_reason"] == "tool_calls" and last["usage"]["total_tokens"] == 16
    assert all(e["choices"][0]["finish_reason"] is None for e in events[:-1])


def test_openai_stream_of_a_plain_answer_has_no_reasoning_or_calls():
    events = _openai_events(openai_stream(turn("ok"), "m"))
    deltas = [e["choices"][0]["delta"] for e in events]
    assert not any("reasoning_content" in d or "tool_calls" in d for d in deltas)
    assert events[-1]["choices"][0]["finish_reason"] == "stop"


# ------------------------------------------------------------------ Anthropic


def test_anthropic_tools():
    assert anthropic_tools(None) is None
    assert anthropic_tools([{"name": "bash", "description": "run", "input_schema": {"type": "object", "x": 1}},
                            {"name": "noop"}]) == [
        {"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object", "x": 1}}},
        {"type": "function", "function": {"name": "noop", "description": "", "parameters": {"type": "object"}}}]
    with pytest.raises(ValueError, match="name"):
        anthropic_tools([{"description": "nameless"}])
    with pytest.raises(ValueError, match="list"):
        anthropic_tools("bash")


def test_anthropic_messages_to_canonical():
    request = [
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "look first", "signature": "s"},
            {"type": "redacted_thinking", "data": "xx"},
            {"type": "text", "text": "Listing."},
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a.py"}]},
            {"type": "text", "text": "Go on."}]},
    ]
    assert anthropic_messages([{"type": "text", "text": "You fix bugs."}], request) == [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "Listing.", "reasoning_content": "look first",
         "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "a.py"},
        {"role": "user", "content": "Go on."},
    ]
    assert anthropic_messages(None, [{"role": "user", "content": "hi"}]) == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("system, messages, error", [
    (None, [], "non-empty"),
    (None, "hi", "non-empty"),
    (None, [{"role": "system", "content": "x"}], "roles"),
    (None, [{"role": "assistant", "content": [{"type": "image", "source": {}}]}], "image"),
    (None, [{"role": "user", "content": [{"type": "image", "source": {}}]}], "image"),
    ([{"type": "document"}], [{"role": "user", "content": "x"}], "document"),
])
def test_anthropic_messages_refuse_what_they_cannot_carry(system, messages, error):
    with pytest.raises(ValueError, match=error):
        anthropic_messages(system, messages)


def test_anthropic_response():
    out = anthropic_response(turn("Listing.", "plan", CALLS, "tool_calls"), "m")
    assert out["type"] == "message" and out["role"] == "assistant" and out["id"].startswith("msg_")
    assert out["stop_reason"] == "tool_use" and out["usage"] == {"input_tokens": 11, "output_tokens": 5}
    assert out["content"] == [
        {"type": "thinking", "thinking": "plan", "signature": ""},
        {"type": "text", "text": "Listing."},
        {"type": "tool_use", "id": "toolu_abc", "name": "bash", "input": {"cmd": "ls"}},
        {"type": "tool_use", "id": "toolu_def", "name": "bash", "input": {"_raw": "not json"}},
    ]
    assert anthropic_response(turn("", calls=CALLS[:1], finish="tool_calls"), "m")["content"][0]["type"] == "tool_use"
    assert anthropic_response(turn(""), "m")["content"] == [{"type": "text", "text": ""}]
    assert anthropic_response(turn("cut", finish="length"), "m")["stop_reason"] == "max_tokens"
    assert anthropic_response(turn("ok"), "m")["stop_reason"] == "end_turn"
    assert anthropic_error("bad", "invalid_request_error") == \
        {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}


def test_anthropic_stream_reassembles_to_the_response():
    t = turn("Listing.", "plan", CALLS[:1], "tool_calls")
    events = []
    for chunk in anthropic_stream(t, "m"):
        head, data, blank = chunk.split("\n", 2)
        assert head.startswith("event: ") and data.startswith("data: ") and blank == "\n"
        body = json.loads(data[len("data: "):])
        assert body["type"] == head[len("event: "):]
        events.append(body)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert events[0]["message"]["content"] == [] and events[0]["message"]["stop_reason"] is None
    blocks: dict[int, dict] = {}
    for e in events:
        if e["type"] == "content_block_start":
            blocks[e["index"]] = dict(e["content_block"])
        elif e["type"] == "content_block_delta":
            delta, block = e["delta"], blocks[e["index"]]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            else:
                block["input"] = json.loads(delta["partial_json"])
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 3
    whole = anthropic_response(t, "m")["content"]
    assert [blocks[i] for i in sorted(blocks)] == [{k: v for k, v in b.items() if k != "signature"} for b in whole]
    assert events[-2]["delta"]["stop_reason"] == "tool_use" and events[-2]["usage"] == {"output_tokens": 5}


def test_a_response_read_back_as_a_request_is_the_same_turn():
    """What a harness sends back of our answer (its history) becomes the turn we produced."""
    t = turn("Listing.", "plan", CALLS[:1], "tool_calls")
    answer = anthropic_response(t, "m")
    (back,) = anthropic_messages(None, [{"role": "assistant", "content": answer["content"]}])
    assert back["content"] == t.content and back["reasoning_content"] == t.reasoning
    assert [json.loads(c["function"]["arguments"]) for c in back["tool_calls"]] == [{"cmd": "ls"}]
