"""Perl's function caller: the judge's half of `coderl.sandbox.languages.perl.Perl`. Perl has no
booleans and returns lists: one value is the answer, several are a list."""

from __future__ import annotations

from coderl.judge.languages.caller import JsonCaller
from coderl.sandbox.languages.perl import Perl


class PerlCaller(JsonCaller):
    sandbox = Perl
    template = "perl"
