"""JavaScript's function caller: the judge's half of `coderl.sandbox.languages.javascript.JavaScript`.

node: CommonJS module scope, so the function is found by name in the same file (the name is
checked to be an identifier before it is spliced in); the caller writes with fs.writeSync:
synchronous, after the program's own console output."""

from __future__ import annotations

from coderl.judge.languages.caller import JsonCaller
from coderl.sandbox.languages.javascript import JavaScript


class JavaScriptCaller(JsonCaller):
    sandbox = JavaScript
    template = "javascript"
