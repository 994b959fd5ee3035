"""The end-of-tests signal of assert programs that would otherwise pass on a clean exit.

MultiPL-E's non-Python tests (ScaleBox's assert route) are whole programs: the completion, then the
tests, and ScaleBox (like MultiPL-E) passes one that exits 0. A completion that exits 0 before the
tests (``exit(0)`` in a static initialiser, ``os.Exit(0)`` in Go's ``init``, ``process::exit(0)``
in the function the tests call, ...) would pass without running one. So before the program enters
the sandbox, a statement that prints a per-request sentinel (``coderl-tests-done-`` and 128 random
bits, made here, outside the sandbox, after the completion was written) is put where the tests end:

- after the tests, for the languages whose tests run at the top level (JavaScript, TypeScript, PHP,
  Perl, R, Racket, Bash; Lua and Ruby too, except that Lua's ``os.exit(lu.LuaUnit.run())`` prints it
  only when the run's failure count is 0, and Ruby's test-unit, which runs its tests at exit, is run
  explicitly first and prints it only when they passed; Racket's rackunit checks, which only print a
  failure, end the program with exit 1 at the first one, so a wrong answer is no longer accepted);
- at the end of the tests' ``main`` (C++, Java, C#, Rust, Scala, Kotlin; D's ``main`` runs after its
  ``unittest`` blocks passed);
- as the last test function of a Go test file (go_test runs them in source order).

The program passes only when it exits 0 AND its stdout holds the sentinel's line; the line is taken
out of the output the client sees. Anything that skips the tests skips the sentinel with them (an
early exit, a block comment or ``__END__`` opened by the completion, a Go ``TestMain``).

Residual risk (docs/api.md): the tests run in the completion's own process, so a program that knows
this scheme can read the sentinel out of its own source or binary and print it, or replace the test
library's asserts; the sentinel answers an early exit, which a policy finds by chance, not a program
written against this harness. A test shape that none of the rules above finds (no ``main`` in a
compiled language's tests) runs without a sentinel, as ScaleBox runs it: `arm` returns None.
"""

from __future__ import annotations

import re
import secrets

MARK = "coderl-tests-done-"
NOT_TO_THE_END = "the tests did not run to the end (no sentinel after the last test)"

#: a statement printing the sentinel on a line of its own, for the languages whose tests end the program
_AFTER = {
    "javascript": 'console.log("\\n{s}");',
    "typescript": 'console.log("\\n{s}");',
    "php": 'echo "\\n{s}\\n";',
    "perl": 'print "\\n{s}\\n";',
    "r": 'cat("\\n{s}\\n")',
    "racket": '(display "\\n{s}\\n")',
    "bash": "printf '\\n%s\\n' '{s}'",
    "ruby": 'print "\\n{s}\\n"',
    "lua": 'io.write("\\n{s}\\n")',
}
#: where the tests' main starts, and the statement put before its closing brace
_IN_MAIN = {
    "cpp": (r"\bint\s+main\s*\(", 'std::cout << "\\n{s}\\n" << std::flush;'),
    "java": (r"\bstatic\s+void\s+main\s*\(", 'System.out.println("\\n{s}"); System.out.flush();'),
    "csharp": (r"\bstatic\s+void\s+Main\s*\(", 'global::System.Console.Write("\\n{s}\\n");'),
    "d": (r"\bvoid\s+main\s*\(", '{{ import std.stdio : write, stdout; write("\\n{s}\\n"); stdout.flush(); }}'),
    "rust": (r"\bfn\s+main\s*\(", 'print!("\\n{s}\\n");'),
    "scala": (r"\bdef\s+main\s*\(", 'println("\\n{s}"); Console.flush()'),
    "kotlin": (r"\bfun\s+main\s*\(", 'println("\\n{s}"); System.out.flush()'),
}
_GO_TEST = '\nfunc TestZzzCoderlTestsDone(t *testing.T) {{\n\tfmt.Print("\\n{s}\\n")\n}}\n'
_CHAR = re.compile(r"'(\\.|[^'\\\n])'")
_LUA_EXIT = re.compile(r"os\.exit\((.*)\)\s*", re.S)
#: rackunit's checks outside a test case only print a failure and go on (the program still exits
#: 0, and ScaleBox accepts a wrong answer): each failure now ends the program with exit 1
_RACKUNIT_FAILS = ("(require rackunit)\n(current-check-handler (let ([shown (current-check-handler)]) "
                   "(lambda (failure) (shown failure) (exit 1))))")
_RUBY_RUN = ("\nTest::Unit::AutoRunner.need_auto_run = false\n__coderl_ok = Test::Unit::AutoRunner.run\n"
             'print "\\n{s}\\n" if __coderl_ok\nexit(__coderl_ok ? 0 : 1)\n')


def new_sentinel() -> str:
    """A sentinel for one request: nothing written before the request can hold it."""
    return MARK + secrets.token_hex(16)


def arm(tests: str, language: str, sentinel: str) -> str | None:
    """``tests`` (the part of the program after the completion) with the sentinel's statement where
    they end; None for a shape this module does not know (the module docstring says where)."""
    if language in ("go", "go_test"):
        return tests + _GO_TEST.format(s=sentinel) if "*testing.T" in tests else None
    if language == "ruby" and "Test::Unit::TestCase" in tests:
        return tests + _RUBY_RUN.format(s=sentinel)
    if language == "lua":
        at = tests.rfind("os.exit(")  # the tests' last statement: os.exit(lu.LuaUnit.run())
        match = _LUA_EXIT.fullmatch(tests, at) if at != -1 else None
        if match:
            return (tests[:at] + f"local __coderl_rc = ({match.group(1)})\n"
                    f'if __coderl_rc == 0 then io.write("\\n{sentinel}\\n") end\nos.exit(__coderl_rc)\n')
    if language == "racket":
        tests = tests.replace("(require rackunit)", _RACKUNIT_FAILS, 1)
    if language in _AFTER:
        return f"{tests}\n{_AFTER[language].format(s=sentinel)}\n"
    if language in _IN_MAIN:
        start, statement = _IN_MAIN[language]
        end = _main_end(tests, start)
        if end is None:
            return None
        return f"{tests[:end]}\n{statement.format(s=sentinel)}\n{tests[end:]}"
    return None


def ran_to_end(stdout: bytes, sentinel: str) -> tuple[bool, bytes]:
    """Whether ``stdout`` holds the sentinel's line, and ``stdout`` without it (what the client sees)."""
    line = f"\n{sentinel}\n".encode()
    at = stdout.rfind(line)
    if at == -1:
        return False, stdout
    return True, stdout[:at] + stdout[at + len(line):]


def _main_end(tests: str, start: str) -> int | None:
    """Where the closing brace of the last ``main`` in ``tests`` is (its body's braces matched past
    string and character literals and comments), or None."""
    starts = list(re.finditer(start, tests))
    if not starts:
        return None
    at = tests.find("{", starts[-1].end())
    if at == -1:
        return None
    depth, i, n = 0, at, len(tests)
    while i < n:
        c = tests[i]
        if tests.startswith("//", i):
            i = _after(tests, "\n", i + 2)
            continue
        if tests.startswith("/*", i):
            i = _after(tests, "*/", i + 2)
            continue
        if tests.startswith('"""', i):
            i = _after(tests, '"""', i + 3)
            continue
        if c == '"':
            i = _string_end(tests, i + 1, escapes=not (i > 0 and tests[i - 1] == "@"))
            continue
        char = _CHAR.match(tests, i) if c == "'" else None
        if char:
            i = char.end()
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _after(text: str, token: str, i: int) -> int:
    end = text.find(token, i)
    return len(text) if end == -1 else end + len(token)


def _string_end(text: str, i: int, *, escapes: bool) -> int:
    """Just past the quote that closes a string opened before ``i`` (C#'s verbatim ``@"..."``: no
    backslash escapes, ``""`` is a quote)."""
    n = len(text)
    while i < n:
        if escapes and text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            if not escapes and text.startswith('""', i):
                i += 2
                continue
            return i + 1
        i += 1
    return n
