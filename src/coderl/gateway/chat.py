"""Chat messages <-> text <-> tokens for the gateway, with the model's own chat template.

Messages are held in one canonical (OpenAI-shaped) form whatever dialect the agent speaks:
``{"role", "content": str, "reasoning_content"?, "tool_calls"?: [{"id", "type", "function":
{"name", "arguments": str}}], "tool_call_id"?}``. An assistant turn the gateway produced is
rendered back into later prompts from its *raw* sampled text (reasoning and tool-call markup as
the model wrote them), so the history the model sees is what it sampled, not a re-serialisation.

Tool calls are parsed in the Hermes/Qwen form ``<tool_call>{"name", "arguments"}</tool_call>``
(the form of the project's tokenizer and of Qwen2.5/Qwen3) and reasoning as ``<think>...</think>``.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_PROBE = "\x00coderl-probe\x00"


@dataclass
class AssistantTurn:
    """One parsed generation, in the canonical form plus what the record needs."""

    raw: str  # the sampled text, end-of-turn token excluded
    content: str
    reasoning: str | None
    tool_calls: list[dict[str, Any]]
    finish_reason: str  # "stop", "tool_calls" or "length"
    ill_formed: int = 0  # <tool_call> blocks whose body is not {"name", "arguments"} JSON
    prompt_tokens: int = 0
    completion_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning is not None:
            msg["reasoning_content"] = self.reasoning
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        return msg


def text_of(content: Any) -> str:
    """OpenAI content: a string, None, or a list of parts; only text parts are supported."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(part.get("text", "")))
            else:
                raise ValueError(f"unsupported content part {part.get('type') if isinstance(part, dict) else part!r}")
        return "".join(parts)
    raise ValueError(f"message content must be a string or a list of parts, got {type(content).__name__}")


def canonical(message: dict[str, Any]) -> dict[str, Any]:
    """An incoming OpenAI-shaped message in the canonical form (raises ValueError on bad shape)."""
    if not isinstance(message, dict) or message.get("role") not in ("system", "developer", "user", "assistant", "tool"):
        raise ValueError(f"each message needs a role of system/user/assistant/tool, got {message!r:.120}")
    role = "system" if message["role"] == "developer" else message["role"]
    out: dict[str, Any] = {"role": role, "content": text_of(message.get("content"))}
    if role == "assistant":
        reasoning = message.get("reasoning_content", message.get("reasoning"))
        if reasoning is not None:
            out["reasoning_content"] = str(reasoning)
        calls = []
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            args = fn.get("arguments", "{}")
            calls.append({"id": call.get("id") or new_call_id(), "type": "function",
                          "function": {"name": str(fn.get("name", "")),
                                       "arguments": args if isinstance(args, str) else json.dumps(args)}})
        if calls:
            out["tool_calls"] = calls
    if role == "tool" and message.get("tool_call_id") is not None:
        out["tool_call_id"] = str(message["tool_call_id"])
    return out


def _args(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (TypeError, ValueError):
        return arguments


def same_message(incoming: dict[str, Any], recorded: dict[str, Any]) -> bool:
    """Whether a message the agent sent back is the one on record. Serialisation details the
    harness is free to change do not count (surrounding whitespace, tool-call ids, the JSON layout
    of arguments, reasoning left out); any change of meaning does."""
    if incoming["role"] != recorded["role"] or incoming["content"].strip() != recorded["content"].strip():
        return False
    if incoming["role"] != "assistant":
        return True
    if "reasoning_content" in incoming and recorded.get("reasoning_content") is not None \
            and incoming["reasoning_content"].strip() != recorded["reasoning_content"].strip():
        return False
    a, b = incoming.get("tool_calls") or [], recorded.get("tool_calls") or []
    return len(a) == len(b) and all(
        x["function"]["name"] == y["function"]["name"] and _args(x["function"]["arguments"]) == _args(y["function"]["arguments"])
        for x, y in zip(a, b, strict=True))


def new_call_id(prefix: str = "call_") -> str:
    return prefix + secrets.token_hex(12)


class ChatFormat:
    """The tokenizer's chat template, plus the two facts about it the record needs: the text it
    puts after an assistant message's content (to know what of it the model sampled) and the
    end-of-turn token ids."""

    def __init__(self, tokenizer: Any, chat_template_kwargs: dict[str, Any] | None = None) -> None:
        self.tokenizer = tokenizer
        self.kwargs = dict(chat_template_kwargs or {})
        probe = self.render([{"role": "user", "content": "u"}, {"role": "assistant", "content": _PROBE}], None, False)
        if _PROBE not in probe:
            raise ValueError("the chat template does not render an assistant message's content verbatim")
        self.closing = probe.split(_PROBE, 1)[1]  # e.g. "<|im_end|>\n"
        stops = {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>"),
                 tokenizer.convert_tokens_to_ids("<|endoftext|>")}
        self.stop_ids = {i for i in stops if isinstance(i, int) and i >= 0 and i != tokenizer.unk_token_id}

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False,
                                                  add_generation_prompt=generation_prompt, **self.kwargs)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def parse(self, ids: list[int], length_stopped: bool) -> tuple[AssistantTurn, str]:
        """Parse sampled ids into an assistant turn; also return the text the template adds after
        this output that the model did not sample (mask 0 at the next turn)."""
        ended = bool(ids) and ids[-1] in self.stop_ids and not length_stopped
        body = ids[:-1] if ended else ids
        raw = self.decode(body)
        stop_text = self.decode(ids[-1:]) if ended else ""
        pending = self.closing[len(stop_text):] if self.closing.startswith(stop_text) else self.closing
        reasoning = None
        rest = raw
        if "</think>" in raw:
            head, rest = raw.split("</think>", 1)
            reasoning = head.split("<think>", 1)[-1].strip("\n")
            rest = rest.lstrip("\n")
        calls, ill = [], 0
        for match in TOOL_CALL.finditer(rest):
            try:
                body_json = json.loads(match.group(1))
                name, args = body_json["name"], body_json.get("arguments", {})
                if not isinstance(name, str):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                ill += 1
                continue
            calls.append({"id": new_call_id(), "type": "function",
                          "function": {"name": name, "arguments": args if isinstance(args, str)
                                       else json.dumps(args, ensure_ascii=False)}})
        content = rest.split("<tool_call>", 1)[0].strip() if calls else rest.strip()
        finish = "length" if not ended else ("tool_calls" if calls else "stop")
        turn = AssistantTurn(raw=raw, content=content, reasoning=reasoning, tool_calls=calls, finish_reason=finish,
                             ill_formed=ill, completion_tokens=len(ids))
        return turn, pending
