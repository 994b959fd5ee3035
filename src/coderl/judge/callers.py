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

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# node: CommonJS module scope, so the function is found by name in the same file (the name is
# checked to be an identifier before it is spliced in). Writes with fs.writeSync: synchronous,
# after the program's own console output.
_JS = """
;(function () {
  const fs = require("fs"), crypto = require("crypto");
  const data = JSON.parse(fs.readFileSync(0, "utf8").split("\\n")[0]);
  const fn = (typeof Solution === "function" && typeof Solution.prototype.NAME === "function")
    ? ((...a) => new Solution().NAME(...a)) : NAME;
  let result = fn(...data.a);
  let payload;
  try { payload = JSON.stringify(result === undefined ? null : result); } catch (e) { payload = "!" + typeof result; }
  const sig = crypto.createHash("sha256").update(data.n + ":ok").digest("hex");
  fs.writeSync(1, "\\n" + sig + " " + payload + "\\n");
})();
"""

_PHP = """
$__coderl = json_decode(fgets(STDIN), true);
$__coderl_fn = (class_exists('Solution') && method_exists('Solution', 'NAME')) ? [new Solution(), 'NAME'] : 'NAME';
$__coderl_result = json_encode(call_user_func_array($__coderl_fn, $__coderl['a']), JSON_PRESERVE_ZERO_FRACTION);
fflush(STDOUT);
fwrite(STDOUT, "\\n" . hash('sha256', $__coderl['n'] . ':ok') . " " . ($__coderl_result === false ? '!value' : $__coderl_result) . "\\n");
"""

_RUBY = """
require "json"
require "digest"
__coderl = JSON.parse($stdin.gets)
__coderl_result = if Object.const_defined?(:Solution) && Solution.method_defined?(:NAME)
  Solution.new.NAME(*__coderl["a"])
else
  send(:NAME, *__coderl["a"])
end
$stdout.flush
STDOUT.syswrite("\\n" + Digest::SHA256.hexdigest(__coderl["n"] + ":ok") + " " + JSON.generate(__coderl_result) + "\\n")
"""

# Perl has no booleans and returns lists: one value is the answer, several are a list.
_PERL = """
{
    use JSON::PP ();
    use Digest::SHA ();
    my $coderl = JSON::PP->new->decode(scalar <STDIN>);
    my @coderl_result = main::NAME(@{$coderl->{a}});
    my $coderl_value = @coderl_result == 1 ? $coderl_result[0] : \\@coderl_result;
    $| = 1;  # flushes what the program printed
    my $coderl_payload = JSON::PP->new->allow_nonref->allow_unknown->encode($coderl_value);
    syswrite STDOUT, "\\n" . Digest::SHA::sha256_hex($coderl->{n} . ":ok") . " " . $coderl_payload . "\\n";
}
"""


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
_TEMPLATES = {"javascript": _JS, "typescript": _JS, "php": _PHP, "ruby": _RUBY, "perl": _PERL}

LANGUAGES: tuple[str, ...] = tuple(_CALLERS)


def function_program(language: str, code: str, fn_name: str) -> str:
    """The submission with the caller of ``fn_name`` appended; ValueError for a name that is not an
    identifier (it is spliced into the program) or a language without a caller."""
    if language not in _CALLERS:
        raise ValueError(f"function tests are not judged for {language} (only python, {', '.join(LANGUAGES)})")
    if not _IDENTIFIER.match(fn_name):
        raise ValueError(f"fn_name {fn_name!r} is not an identifier")
    return _CALLERS[language](code, _TEMPLATES[language].replace("NAME", fn_name))
