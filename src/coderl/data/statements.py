"""Problem statements for bug tasks that have none published: written from what the failing tests
show (their names and pytest's one-line failure messages), never from the fix.

The gold patch is read only to keep it out: a message line that quotes a line the fix adds or
removes, or names a changed file with a line number (``src/pkg/core.py:123``), is left out, and a
test's message is never longer than a few short lines. What remains says which behaviour is
wrong, as a bug report would, not where or how to mend it.
"""

from __future__ import annotations

import re

from coderl.swe.patch import MalformedDiff, split_diff

_MAX_TESTS = 8
_MAX_LINES = 3
_MAX_CHARS = 300
_MIN_QUOTE = 6  # changed lines shorter than this ("else:", "pass") are too common to count as quoting


def changed_lines(gold_patch: str) -> tuple[set[str], set[str]]:
    """The stripped text of every line the patch adds or removes, and the files it changes."""
    try:
        sections = split_diff(gold_patch)
    except MalformedDiff:
        return set(), set()
    lines, files = set(), set()
    for section in sections:
        files.update(section.paths)
        for line in section.text.splitlines():
            if line.startswith(("+++", "---")) or not line.startswith(("+", "-")):
                continue
            text = line[1:].strip()
            if len(text) >= _MIN_QUOTE:
                lines.add(text)
    return lines, files


def reveals_fix(text: str, gold_patch: str) -> bool:
    """Whether ``text`` quotes a changed line of the fix or names a changed file's line."""
    lines, files = changed_lines(gold_patch)
    return any(line in text for line in lines) or any(
        re.search(rf"{re.escape(f)}:\d+", text) or re.search(rf"{re.escape(f.rsplit('/', 1)[-1])}:\d+", text)
        for f in files)


def failing_tests_statement(repo: str, fail_to_pass: list[str], messages: dict[str, str], gold_patch: str) -> str:
    """A bug report from the failing tests: which fail, and how (see the module docstring)."""
    shown = fail_to_pass[:_MAX_TESTS]
    items = []
    for test in shown:
        message = _safe_message(messages.get(test, "") or messages.get(test.split("::", 1)[0], ""), gold_patch)
        items.append(f"- `{test}`" + (f"\n  fails with: {message}" if message else ""))
    more = f"\n- and {len(fail_to_pass) - len(shown)} more tests" if len(fail_to_pass) > len(shown) else ""
    noun = "test that should pass fails" if len(fail_to_pass) == 1 else f"{len(fail_to_pass)} tests that should pass fail"
    return (f"Something in {repo} is broken: the {noun}.\n\n" + "\n".join(items) + more + "\n\n"
            "Fix the library's code so that these tests pass and the rest of the test suite keeps passing. "
            "Some of these tests may be absent from the working tree; they are run as written when the change "
            "is checked.")


def _safe_message(message: str, gold_patch: str) -> str:
    kept = []
    for line in message.strip().splitlines():
        line = line.strip()
        if not line or reveals_fix(line, gold_patch):
            continue
        kept.append(line[:_MAX_CHARS])
        if len(kept) == _MAX_LINES:
            break
    return " / ".join(kept)
