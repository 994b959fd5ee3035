"""Function-call judging beyond Python: the code each language appends to a submission so that it
reads one case from stdin, calls the function and writes ``<signature> <json>`` as its last line.

The contract is Python's (`coderl.judge.harness`): stdin holds ``{"n": nonce, "f": name, "a":
[args]}`` as one JSON line; the program answers ``sha256(nonce + ":ok")``, a space and the return
value as JSON, after everything it printed itself; the comparison happens outside the sandbox. A
``Solution`` class with the method is preferred over a top-level function (LeetCode style). The
caller is compiled into the program once per submission; only stdin changes per case. Languages
here are those whose standard library parses JSON and hashes SHA-256 (node, PHP, Ruby, Perl); the
others get a caller with the arguments as typed literals (`coderl.judge.typed_callers`).
"""

from __future__ import annotations

import re

from coderl.judge.templates import render

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

def _php(code: str, caller: str) -> str:
    body = code if code.lstrip().startswith("<?php") else "<?php\n" + code
    reopen = "\n<?php\n" if body.rstrip().endswith("?>") else "\n"
    return body + reopen + caller


_CALLERS = {
    "javascript": lambda code, caller: code + "\n" + caller,
    "typescript": lambda code, caller: code + "\n" + caller,
    "php": _php,
    "ruby": lambda code, caller: code + "\n" + caller,
    "perl": lambda code, caller: code + "\n" + caller,
}
# The caller templates (templates/<language>/caller.tmpl). node: CommonJS module scope, so the
# function is found by name in the same file (the name is checked to be an identifier before it
# is spliced in); it writes with fs.writeSync: synchronous, after the program's own console
# output; typescript runs the same caller. Perl has no booleans and returns lists: one value is
# the answer, several are a list.
_TEMPLATES = {"javascript": "javascript", "typescript": "javascript", "php": "php", "ruby": "ruby", "perl": "perl"}

LANGUAGES: tuple[str, ...] = tuple(_CALLERS)


def function_program(language: str, code: str, fn_name: str) -> str:
    """The submission with the caller of ``fn_name`` appended; ValueError for a name that is not an
    identifier (it is spliced into the program) or a language without a caller."""
    if language not in _CALLERS:
        raise ValueError(f"function tests are not judged for {language} (only python, {', '.join(LANGUAGES)})")
    if not _IDENTIFIER.match(fn_name):
        raise ValueError(f"fn_name {fn_name!r} is not an identifier")
    return _CALLERS[language](code, render(_TEMPLATES[language], "caller", name=fn_name))
