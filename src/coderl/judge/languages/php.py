"""PHP's function caller: the judge's half of `coderl.sandbox.languages.php.Php`."""

from __future__ import annotations

from coderl.judge.languages.caller import JsonCaller
from coderl.sandbox.languages.php import Php


class PhpCaller(JsonCaller):
    sandbox = Php
    template = "php"

    def join(self, code: str, caller: str) -> str:
        """The caller in PHP mode: opens ``<?php`` where the submission does not, reopens it
        where the submission closes it."""
        body = code if code.lstrip().startswith("<?php") else "<?php\n" + code
        reopen = "\n<?php\n" if body.rstrip().endswith("?>") else "\n"
        return body + reopen + caller
