"""Ruby's function caller: the judge's half of `coderl.sandbox.languages.ruby.Ruby`."""

from __future__ import annotations

from coderl.judge.languages.caller import JsonCaller
from coderl.sandbox.languages.ruby import Ruby


class RubyCaller(JsonCaller):
    sandbox = Ruby
    template = "ruby"
