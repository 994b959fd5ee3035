"""TypeScript's function caller: the judge's half of `coderl.sandbox.languages.typescript.TypeScript`
(the JavaScript caller: it is TypeScript as well)."""

from __future__ import annotations

from coderl.judge.languages.caller import JsonCaller
from coderl.sandbox.languages.typescript import TypeScript


class TypeScriptCaller(JsonCaller):
    sandbox = TypeScript
    template = "javascript"
