"""Getting the program out of a model response.

Rules, in order (the one that fired is reported as ``rule``):

1. ``fence:<lang>``   drop ``<think>...</think>`` (and an unterminated ``<think>`` up to the end);
                      take the LAST complete fenced block whose tag is the wanted language (or an
                      alias of it) - LiveCodeBench takes the last block too.
2. ``fence:any``      no block tagged with that language: the last complete fenced block with no tag
                      or an unknown tag.
3. ``fence:open``     an unterminated final fence (the response was cut): what follows it.
4. ``raw``            no fence at all, but the response parses as the language (Python only):
                      the whole response.
Otherwise `NoCodeFound`. The language comes from the fence tag when the caller gave none.
`extract_lcb` is LiveCodeBench's stricter rule, for evaluations that must match its numbers.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from coderl.errors import NoCodeFound

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.S)
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.S | re.M)
_OPEN_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*)\Z", re.S | re.M)
_TAGS = {
    "python": ("python", "python3", "py", "py3"),
    "cpp": ("cpp", "c++", "cxx", "cc"),
    "c": ("c",),
    "java": ("java",),
    "javascript": ("javascript", "js", "node", "nodejs"),
    "go": ("go", "golang"),
    "rust": ("rust", "rs"),
}
_TAG_TO_LANG = {tag: lang for lang, tags in _TAGS.items() for tag in tags}


@dataclass(frozen=True)
class ExtractedCode:
    code: str
    language: str
    rule: str


def strip_reasoning(response: str) -> str:
    return _THINK.sub("", response)


def extract_code(response: str, language: str | None = None) -> ExtractedCode:
    """The program in ``response``; see the module docstring for the rules."""
    if not isinstance(response, str):
        raise NoCodeFound(f"response must be a string, got {type(response).__name__}")
    text = strip_reasoning(response)
    wanted = _TAG_TO_LANG.get((language or "").lower(), (language or "").lower() or None)
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    if blocks:
        tagged = [(t, c) for t, c in blocks if _TAG_TO_LANG.get(t) == wanted] if wanted else []
        if tagged:
            return ExtractedCode(tagged[-1][1], wanted, f"fence:{wanted}")  # type: ignore[arg-type]
        if not wanted:
            known = [(t, c) for t, c in blocks if t in _TAG_TO_LANG]
            tag, code = (known or blocks)[-1]
            lang = _TAG_TO_LANG.get(tag)
            return ExtractedCode(code, lang or "python", f"fence:{lang}" if lang else "fence:any")
        untagged = [c for t, c in blocks if t not in _TAG_TO_LANG]
        if untagged:
            return ExtractedCode(untagged[-1], wanted, "fence:any")
    tail = text[blocks and _last_fence_end(text) or 0:]
    opened = _OPEN_FENCE.search(tail)
    if opened and opened.group(2).strip():
        tag = opened.group(1).lower()
        lang = wanted or _TAG_TO_LANG.get(tag, "python")
        if not wanted or tag in ("", *_TAGS.get(wanted, ())):
            return ExtractedCode(opened.group(2), lang, "fence:open")
    if not blocks and (wanted in (None, "python")) and _parses_as_python(text):
        return ExtractedCode(text, "python", "raw")
    raise NoCodeFound("no code block found in the response"
                      + (f" for language {wanted}" if wanted else ""))


def extract_lcb(response: str) -> ExtractedCode:
    """LiveCodeBench's own rule (lcb_runner/utils/extraction_utils.py): the lines between the last
    two lines that contain a fence, ``<think>`` not stripped; fewer than two such lines is no code
    (a fail). Stricter than `extract_code`, whose fallbacks (an unterminated fence, a fence-less
    program) would score samples the official evaluation scores 0."""
    if not isinstance(response, str):
        raise NoCodeFound(f"response must be a string, got {type(response).__name__}")
    lines = response.split("\n")
    fences = [i for i, line in enumerate(lines) if "```" in line]
    if len(fences) < 2:
        raise NoCodeFound("fewer than two fence lines (LiveCodeBench's extraction rule)")
    code = "\n".join(lines[fences[-2] + 1:fences[-1]])
    if not code.strip():
        raise NoCodeFound("the last fenced block is empty (LiveCodeBench's extraction rule)")
    return ExtractedCode(code, "python", "lcb")


def _last_fence_end(text: str) -> int:
    end = 0
    for m in _FENCE.finditer(text):
        end = m.end()
    return end


def _parses_as_python(text: str) -> bool:
    stripped = text.strip()
    if not stripped or "\n" not in stripped and " " in stripped and not stripped.startswith(("print", "import")):
        return False
    try:
        ast.parse(stripped)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
