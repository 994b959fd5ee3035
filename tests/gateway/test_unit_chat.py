"""coderl.gateway.chat on its own: incoming messages into the canonical form, the comparison that
decides whether a harness changed its history, and parsing sampled tokens with the real Qwen
tokenizer and chat template (built offline by coderl.data.qwen_tokenizer, tests/helpers/tiny_model.py)."""

from __future__ import annotations

import json

import pytest

from coderl.gateway.chat import ChatFormat, canonical, new_call_id, same_message, text_of


@pytest.fixture(scope="module")
def fmt(tokenizer):  # tokenizer: tests/helpers/tiny_model.py
    return ChatFormat(tokenizer)


def ids(tokenizer, text: str, *, end: bool = True) -> list[int]:
    out = tokenizer.encode(text, add_special_tokens=False)
    return out + [tokenizer.convert_tokens_to_ids("<|im_end|>")] if end else out


# ------------------------------------------------------------------ canonical messages


def test_text_of_joins_text_parts_and_refuses_others():
    assert text_of(None) == "" and text_of("plain") == "plain"
    assert text_of([{"type": "text", "text": "a"}, "b", {"type": "input_text", "text": "c"},
                    {"type": "output_text", "text": "d"}]) == "abcd"
    with pytest.raises(ValueError, match="image_url"):
        text_of([{"type": "image_url", "image_url": {"url": "x"}}])
    with pytest.raises(ValueError, match="int"):
        text_of(42)


def test_canonical_message_shapes():
    assert canonical({"role": "developer", "content": "rules"}) == {"role": "system", "content": "rules"}
    assert canonical({"role": "tool", "content": [{"type": "text", "text": "out"}], "tool_call_id": 7}) == \
        {"role": "tool", "content": "out", "tool_call_id": "7"}
    turn = canonical({"role": "assistant", "content": None, "reasoning": "hmm",
                      "tool_calls": [{"function": {"name": "bash", "arguments": {"cmd": "ls"}}},
                                     {"id": "call_x", "function": {"name": "bash", "arguments": '{"cmd": "pwd"}'}}]})
    assert turn["content"] == "" and turn["reasoning_content"] == "hmm"
    first, second = turn["tool_calls"]
    assert first["id"].startswith("call_") and json.loads(first["function"]["arguments"]) == {"cmd": "ls"}
    assert second == {"id": "call_x", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "pwd"}'}}
    assert "tool_calls" not in canonical({"role": "assistant", "content": "hi", "tool_calls": []})


@pytest.mark.parametrize("bad", [{"content": "no role"}, {"role": "robot", "content": "x"}, "not a dict"])
def test_canonical_refuses_unknown_roles(bad):
    with pytest.raises(ValueError, match="role"):
        canonical(bad)


def test_call_ids_are_prefixed_and_unique():
    made = {new_call_id() for _ in range(200)}
    assert len(made) == 200 and all(i.startswith("call_") and len(i) == 29 for i in made)
    assert new_call_id("toolu_").startswith("toolu_")


def _call(name: str, arguments: str, call_id: str = "call_1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_same_message_ignores_serialisation_but_not_meaning():
    recorded = {"role": "assistant", "content": "Let me look.", "reasoning_content": "think",
                "tool_calls": [_call("bash", '{"cmd": "ls", "n": 1}')]}
    resent = {"role": "assistant", "content": "  Let me look.\n", "tool_calls": [_call("bash", '{"n":1,"cmd":"ls"}', "other")]}
    assert same_message(resent, recorded)  # whitespace, call id, JSON layout, reasoning left out
    assert not same_message({**resent, "content": "Let me look!"}, recorded)
    assert not same_message({**resent, "reasoning_content": "other thoughts"}, recorded)
    assert not same_message({**resent, "tool_calls": [_call("sh", '{"cmd": "ls", "n": 1}')]}, recorded)
    assert not same_message({**resent, "tool_calls": [_call("bash", '{"cmd": "ls", "n": 2}')]}, recorded)
    assert not same_message({**resent, "tool_calls": []}, recorded)
    assert not same_message({"role": "user", "content": "Let me look."}, recorded)
    assert same_message({"role": "user", "content": "hi "}, {"role": "user", "content": "hi"})


# ------------------------------------------------------------------ the chat format


def test_format_learns_the_templates_closing_and_stop_tokens(fmt, tokenizer):
    assert fmt.closing == "<|im_end|>\n"
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") in fmt.stop_ids
    text = fmt.render([{"role": "user", "content": "hello"}], None, True)
    assert text.endswith("<|im_start|>assistant\n") and fmt.decode(fmt.encode(text)) == text


def test_format_refuses_a_template_that_rewrites_assistant_content(tokenizer):
    import copy

    other = copy.deepcopy(tokenizer)
    other.chat_template = "{% for m in messages %}{{ m.role }}: {{ m.content | upper }}\n{% endfor %}"
    with pytest.raises(ValueError, match="verbatim"):
        ChatFormat(other)


def test_parse_a_plain_answer(fmt, tokenizer):
    turn, pending = fmt.parse(ids(tokenizer, "The answer is 4."), length_stopped=False)
    assert (turn.content, turn.reasoning, turn.tool_calls, turn.finish_reason) == ("The answer is 4.", None, [], "stop")
    assert turn.raw == "The answer is 4." and pending == "\n"  # the template's glue after <|im_end|>
    assert turn.completion_tokens == len(ids(tokenizer, "The answer is 4."))


def test_parse_reasoning_and_tool_calls(fmt, tokenizer):
    text = ('<think>\nlist first\n</think>\n\nLooking.\n<tool_call>\n{"name": "bash", "arguments": {"cmd": "ls"}}\n'
            '</tool_call>\n<tool_call>\n{"name": "bash", "arguments": "{\\"cmd\\": \\"pwd\\"}"}\n</tool_call>\n'
            '<tool_call>\nnot json\n</tool_call>\n<tool_call>\n{"name": 3, "arguments": {}}\n</tool_call>')
    turn, _ = fmt.parse(ids(tokenizer, text), length_stopped=False)
    assert turn.reasoning == "list first" and turn.content == "Looking."
    assert turn.finish_reason == "tool_calls" and turn.ill_formed == 2
    assert [json.loads(c["function"]["arguments"]) for c in turn.tool_calls] == [{"cmd": "ls"}, {"cmd": "pwd"}]
    assert turn.message() == {"role": "assistant", "content": "Looking.", "reasoning_content": "list first",
                              "tool_calls": turn.tool_calls}


def test_parse_an_output_cut_by_the_length_limit(fmt, tokenizer):
    """No end-of-turn token: the turn is "length" and the whole closing is still to be added."""
    cut = ids(tokenizer, "I will now", end=False)
    turn, pending = fmt.parse(cut, length_stopped=True)
    assert (turn.finish_reason, turn.content, pending) == ("length", "I will now", "<|im_end|>\n")
    # an end-of-turn token sampled as the very last allowed token still ends the turn when the
    # caller says the length limit, not the token, stopped it
    ended, _ = fmt.parse(ids(tokenizer, "Done."), length_stopped=True)
    assert ended.finish_reason == "length" and "<|im_end|>" in ended.raw


def test_parse_nothing(fmt):
    turn, pending = fmt.parse([], length_stopped=True)
    assert (turn.raw, turn.content, turn.finish_reason, turn.completion_tokens) == ("", "", "length", 0)
    assert pending == "<|im_end|>\n"
