"""What counts as the model's answer in a multi-turn, tool-using response.

verl hands the reward the whole decoded response: assistant turns, tool calls and the tool
responses in between. Only the final answer is judged: the text after the last tool response,
with any tool-call blocks removed (code sent to the interpreter is exploration, not the answer,
and a program printed by a tool must never be mistaken for one). The chat template's role line
that opens the final turn (``assistant``, left over once special tokens are skipped) is dropped so
that a fence-less answer is not read as code starting with the word ``assistant``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A tool-call block, its body captured; one cut off at the end of the text counts too (a response
# that ran out of tokens mid-call). The gateway parses calls strictly (coderl.gateway.chat).
TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)
_TOOL_RESPONSE_END = "</tool_response>"
_ROLE_LINE = re.compile(r"\A\s*assistant[ \t]*\n")


@dataclass(frozen=True)
class FinalAnswer:
    text: str
    tool_calls: int


def final_answer(solution_str: str) -> FinalAnswer:
    """The final turn's text (tool calls removed) and how many tool calls the response made."""
    tool_calls = solution_str.count("<tool_call>")
    _, after_tools, tail = solution_str.rpartition(_TOOL_RESPONSE_END)
    if after_tools:
        tail = _ROLE_LINE.sub("", tail, count=1)
    return FinalAnswer(text=TOOL_CALL_BLOCK.sub("", tail), tool_calls=tool_calls)
