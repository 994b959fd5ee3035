from __future__ import annotations

import re

from coderl.sandbox.languages.base import Language

# what is not code: comments, verbatim strings (@"..." with "" inside), char and string literals.
# Comments count too: a completion's `// "` must not make the tests after it look like a literal
_NOT_CODE = re.compile(r"""(//[^\n]*|/\*.*?\*/|\$?@\$?"(?:[^"]|"")*"|'(?:\\.|[^'\\])'|"(?:\\.|[^"\\\n])*")""", re.S)
# C# 8's nullable annotation on the built-in reference types: ``string? s``, ``object?[] a``
_NULLABLE_REFERENCE = re.compile(r"\b(string|object)\?(?=\s*(?:\[|\]|>|,|\)|[A-Za-z_@]))")
_DEBUG_CLASS = r"(?:global\s*::\s*)?(?:System\s*\.\s*Diagnostics\s*\.\s*)?(?:Debug|Trace)\b"
# `using static System.Diagnostics.Debug;` (bare Assert calls) and `using D = ...Debug;` (D.Assert)
_USING_STATIC = re.compile(rf"\busing\s+static\s+{_DEBUG_CLASS}\s*;")
_USING_ALIAS = re.compile(rf"\busing\s+(@?[A-Za-z_]\w*)\s*=\s*{_DEBUG_CLASS}\s*;")
_FAILING_ASSERT = "global::CoderlAssert__.Check"
# appended after the submission (its line numbers stay): what .NET's failing Debug.Assert does
_FAILING_ASSERT_CLASS = (
    "\nstatic class CoderlAssert__ {"
    " public static void Check(bool condition) { Check(condition, \"\", \"\"); }"
    " public static void Check(bool condition, string message) { Check(condition, message, \"\"); }"
    " public static void Check(bool condition, string message, string detailMessageFormat, params object[] args)"
    " { Check(condition, message, string.Format(detailMessageFormat, args)); }"
    " public static void Check(bool condition, string message, string detailMessage) { if (condition) return;"
    " System.Console.Out.Flush();"
    " System.Console.Error.WriteLine((\"Assertion failed. \" + message + \" \" + detailMessage).TrimEnd());"
    " System.Environment.Exit(134); } }\n")


# a method named Assert declared by the program (a word before the name, not a statement's
# `else`/`do`): bare Assert calls then mean it, on .NET too (the class's own members come first)
_DECLARED_ASSERT = re.compile(r"\b(?!(?:else|do)\b)\w+\s+Assert\s*[<(]")


def _assert_calls(code: str) -> re.Pattern[str]:
    """The Debug/Trace.Assert calls of this program (its code without comments and literals), in
    every form that names them: qualified or not (spaces around the dots allowed), through a using
    alias, and bare ``Assert(`` under ``using static`` where the program declares no Assert."""
    names = [_DEBUG_CLASS] + [re.escape(alias) + r"\b" for alias in _USING_ALIAS.findall(code)]
    bare = "|Assert" if _USING_STATIC.search(code) and not _DECLARED_ASSERT.search(code) else ""
    return re.compile(rf"(?<![\w.:@])(?:(?:{'|'.join(names)})\s*\.\s*Assert{bare})(?=\s*\()")


class CSharp(Language):
    """Mono: mcs compiles once to main.exe, mono runs it (Debian packages no .NET SDK).

    mcs speaks C# 7, where ``string?`` is an error; in C# 8 it is only an annotation (nullable
    reference types change warnings, not code), so the annotation on ``string`` and ``object`` is
    dropped before compiling, as the programs ScaleBox's .NET accepts use it. ``int?`` is C# 7's
    Nullable<int> and stays.

    ``Debug.Assert`` is how MultiPL-E's C# tests check answers. On .NET (ScaleBox runs `dotnet run`,
    a Debug build) a failing one ends the process; on Mono it only logs, even with DEBUG defined, so
    a wrong answer exited 0 and was accepted. Calls to ``Debug.Assert``/``Trace.Assert`` outside
    comments and literals, however named (qualified, through a using alias, bare under ``using
    static``), go to a class appended after the submission that ends the program with 134 (as
    .NET's abort does) and "Assertion failed." on stderr. Comments are skipped as literals are, so
    that a completion's ``// "`` cannot hide the tests after it."""

    name = "csharp"
    aliases = ("c#", "cs", "mono")
    source_name = "main.cs"
    compile_argv = ("/usr/bin/mono", "/usr/lib/mono/4.5/mcs.exe", "-optimize+", "-out:main.exe", "{src}")
    run_argv = ("/usr/bin/mono", "main.exe")
    artifacts = ("main.exe",)
    version_argv = ("mono", "--version")
    memory_error_markers = ("System.OutOfMemoryException",)
    memory_overhead_mb = 64
    hello = 'class P { static void Main() { System.Console.WriteLine("hello, coderl"); } }\n'

    @classmethod
    def source_for(cls, source: str) -> tuple[str, str]:
        # literals (odd pieces of the split) are kept as written
        pieces = _NOT_CODE.split(source)
        assert_calls = _assert_calls("".join(pieces[::2]))
        code = "".join(p if i % 2 else assert_calls.sub(_FAILING_ASSERT, _NULLABLE_REFERENCE.sub(r"\1", p))
                       for i, p in enumerate(pieces))
        return cls.source_name, code + (_FAILING_ASSERT_CLASS if _FAILING_ASSERT in code else "")

    @classmethod
    def extra_binds(cls) -> tuple[str, ...]:
        return ("/etc/mono",)  # the runtime's config and machine.config
