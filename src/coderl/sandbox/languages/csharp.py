from __future__ import annotations

import re

from coderl.sandbox.languages.base import Language

# C# 8's nullable annotation on the built-in reference types: ``string? s``, ``object?[] a``
_STRING_LITERAL = re.compile(r"('(?:\\.|[^'\\])'|\"(?:\\.|[^\"\\])*\")")
_NULLABLE_REFERENCE = re.compile(r"\b(string|object)\?(?=\s*(?:\[|\]|>|,|\)|[A-Za-z_@]))")
# Debug.Assert / Trace.Assert, however qualified: a failure stops the program, as on .NET
_ASSERT_CALL = re.compile(r"(?<![\w.])(?:global::)?(?:System\.Diagnostics\.)?(?:Debug|Trace)\.Assert(?=\s*\()")
_FAILING_ASSERT = "global::CoderlAssert__.Check"
# appended after the submission (its line numbers stay): what .NET's failing Debug.Assert does
_FAILING_ASSERT_CLASS = (
    "\nstatic class CoderlAssert__ {"
    " public static void Check(bool ok) { Check(ok, \"\", \"\"); }"
    " public static void Check(bool ok, string message) { Check(ok, message, \"\"); }"
    " public static void Check(bool ok, string message, string detail) { if (ok) return;"
    " System.Console.Out.Flush();"
    " System.Console.Error.WriteLine((\"Assertion failed. \" + message + \" \" + detail).TrimEnd());"
    " System.Environment.Exit(134); } }\n")


class CSharp(Language):
    """Mono: mcs compiles once to main.exe, mono runs it (Debian packages no .NET SDK).

    mcs speaks C# 7, where ``string?`` is an error; in C# 8 it is only an annotation (nullable
    reference types change warnings, not code), so the annotation on ``string`` and ``object`` is
    dropped before compiling, as the programs ScaleBox's .NET accepts use it. ``int?`` is C# 7's
    Nullable<int> and stays.

    ``Debug.Assert`` is how MultiPL-E's C# tests check answers. On .NET (ScaleBox runs `dotnet run`,
    a Debug build) a failing one ends the process; on Mono it only logs, even with DEBUG defined, so
    a wrong answer exited 0 and was accepted. Calls to ``Debug.Assert``/``Trace.Assert`` outside
    string literals go to a class appended after the submission that ends the program with 134 (as
    .NET's abort does) and "Assertion failed." on stderr."""

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
        pieces = _STRING_LITERAL.split(source)
        code = "".join(p if i % 2 else _ASSERT_CALL.sub(_FAILING_ASSERT, _NULLABLE_REFERENCE.sub(r"\1", p))
                       for i, p in enumerate(pieces))
        asserts = any(_ASSERT_CALL.search(p) for p in pieces[::2])
        return cls.source_name, code + (_FAILING_ASSERT_CLASS if asserts else "")

    @classmethod
    def extra_binds(cls) -> tuple[str, ...]:
        return ("/etc/mono",)  # the runtime's config and machine.config
