"""What counts as the model's answer in a multi-turn, tool-using response.

verl hands the reward the whole decoded response: assistant turns, tool calls and the tool
responses in between. Only the final answer is judged: the text after the last tool response,
with any tool-call blocks removed (code sent to the interpreter is exploration, not the answer,
and a program printed by a tool must never be mistaken for one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOOL_CALL = re.compile(r"<tool_call>.*?(</tool_call>|\Z)", re.S)
_TOOL_RESPONSE_END = "</tool_response>"


@dataclass(frozen=True)
class FinalAnswer:
    text: str
    tool_calls: int


def final_answer(solution_str: str) -> FinalAnswer:
    tool_calls = solution_str.count("<tool_call>")
    tail = solution_str.rsplit(_TOOL_RESPONSE_END, 1)[-1]
    return FinalAnswer(text=_TOOL_CALL.sub("", tail), tool_calls=tool_calls)
