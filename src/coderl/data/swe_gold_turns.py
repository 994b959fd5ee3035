"""The model's side of a gold episode: assistant turns that fix a repository task with its gold
patch, written the way mini-swe-agent's stock config (``mini.yaml``) asks its model to answer.

mini-swe-agent 2.x calls its model with one ``bash`` tool; each answer is reasoning text plus one
tool call ``{"command": ...}``, and ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` alone ends the
episode. A Qwen-family model writes a tool call as ``<tool_call>{"name", "arguments"}</tool_call>``
after its text (the chat template's own form), so that is the raw text of each turn here: what the
gateway parses into mini's tool call and what SFT then trains the model to write.

Variants differ in how the agent looks (``cat``, ``nl -ba``, ``ls`` first), how it edits (the whole
file rewritten with a heredoc, a ``sed`` line replacement, a Python ``str.replace``), whether it
runs the tests before submitting, and in wording, so a tiny model sees more than one way to the
same fix. Every command is deterministic: the gold episode must resolve the task (checked by the
builder with the grader).
"""

from __future__ import annotations

import difflib
import json
import shlex
from dataclasses import dataclass

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
LOOK = ("cat {path}", "nl -ba {path}", "cat {path}", "ls && cat {path}")
EDIT = ("heredoc", "sed", "replace", "heredoc")
VERIFY = (None, "failing", None, "all")  # which tests the variant runs before submitting
THOUGHT_LOOK = ("The issue is about {path}. Let me read it first.",
                "I need to see the code in {path} before changing it.",
                "Let me look at {path} to find the bug the issue describes.")
THOUGHT_EDIT = ("The bug is this line:\n{old}\nIt should be:\n{new}\nI will fix it.",
                "Found it. `{old_s}` is wrong; `{new_s}` gives the behaviour the issue asks for.",
                "The problem is `{old_s}`. I will change it to `{new_s}`.")
THOUGHT_VERIFY = ("Now I run the tests to check the fix.", "Let me make sure the tests pass with the fix.")
THOUGHT_SUBMIT = ("The fix is in place. Submitting.", "Done: the issue is fixed. I submit my changes.",
                  "The change resolves the issue, so I will submit.")


@dataclass(frozen=True)
class FileFix:
    """One file of the gold patch: its text before and after."""

    path: str
    old: str
    new: str

    def changed_lines(self) -> tuple[list[str], list[str], int]:
        """The first changed block: its old lines, its new lines and its 0-based line number."""
        a, b = self.old.splitlines(), self.new.splitlines()
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
            if tag != "equal":
                return a[i1:i2], b[j1:j2], i1
        return [], [], 0


def tool_call(command: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": command}}, ensure_ascii=False) + \
        "\n</tool_call>"


def turn(thought: str, command: str) -> str:
    """One assistant turn's raw text: reasoning, then the one bash call."""
    return f"{thought}\n{tool_call(command)}"


def gold_turns(fixes: list[FileFix], tests: tuple[str, ...], variant: int) -> list[str]:
    """The raw assistant turns of gold episode ``variant`` (any int; four command patterns, the
    wording cycling independently of them). ``tests``: test ids the agent's tree holds (what a
    verifying variant runs: the ids, or their files whole)."""
    plan, words = variant % len(LOOK), variant // len(LOOK) + variant
    turns = []
    for fix in fixes:
        thought = THOUGHT_LOOK[words % len(THOUGHT_LOOK)].format(path=fix.path)
        turns.append(turn(thought, LOOK[plan].format(path=fix.path)))
    for fix in fixes:
        turns.append(turn(_edit_thought(fix, words), _edit_command(fix, EDIT[plan])))
    if VERIFY[plan] is not None and tests:  # with none to run, the variant submits without a test run
        names = tests if VERIFY[plan] == "failing" else dict.fromkeys(t.split("::", 1)[0] for t in tests)
        turns.append(turn(THOUGHT_VERIFY[words % len(THOUGHT_VERIFY)],
                          "python -m pytest -q " + " ".join(shlex.quote(n) for n in names)))
    turns.append(turn(THOUGHT_SUBMIT[words % len(THOUGHT_SUBMIT)], SUBMIT))
    return turns


def _edit_thought(fix: FileFix, words: int) -> str:
    old, new, _ = fix.changed_lines()
    template = THOUGHT_EDIT[words % len(THOUGHT_EDIT)]
    if len(old) != 1 or len(new) != 1:  # an inserted or multi-line change: quote the new code whole
        template = THOUGHT_EDIT[0]
    return template.format(old="\n".join(old) or "(nothing)", new="\n".join(new), old_s=" ".join(old).strip(),
                           new_s=" ".join(new).strip())


def _edit_command(fix: FileFix, how: str) -> str:
    if how == "sed":
        old, new, line = fix.changed_lines()
        if len(old) == len(new) == 1 and len(_diff_blocks(fix)) == 1 and not set(new[0]) & set("|'\\&\n"):
            return f"sed -i '{line + 1}s|.*|{new[0]}|' {fix.path}"
        how = "replace"  # sed cannot say it simply: fall back to a Python replacement
    if how == "replace":
        edits = "".join(f"text = text.replace({old!r}, {new!r}, 1)\n" for old, new in _replacements(fix))
        return (f"python3 - <<'EOF'\nfrom pathlib import Path\npath = Path({fix.path!r})\ntext = path.read_text()\n"
                f"{edits}path.write_text(text)\nEOF")
    return f"cat <<'EOF' > {fix.path}\n{fix.new}EOF"


def _diff_blocks(fix: FileFix) -> list[tuple[int, int, int, int]]:
    a, b = fix.old.splitlines(keepends=True), fix.new.splitlines(keepends=True)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in
            difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if tag != "equal"]


def _replacements(fix: FileFix) -> list[tuple[str, str]]:
    """(old, new) text pairs, applied in order, that turn the old file into the new one: each
    changed block widened by a line of context until it occurs once in the file (an insertion
    needs context to say where)."""
    a, b = fix.old.splitlines(keepends=True), fix.new.splitlines(keepends=True)
    pairs = []
    for i1, i2, j1, j2 in _diff_blocks(fix):
        lo, hi, pad = i1, i2, 0
        while True:
            old = "".join(a[lo:hi])
            if old and fix.old.count(old) == 1:
                break
            pad += 1
            lo, hi = max(i1 - pad, 0), min(i2 + pad, len(a))
            if lo == 0 and hi == len(a):
                old = fix.old
                break
        new = "".join(a[lo:i1]) + "".join(b[j1:j2]) + "".join(a[i2:hi])
        pairs.append((old, new))
    return pairs
