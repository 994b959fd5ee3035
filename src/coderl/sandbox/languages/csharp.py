from __future__ import annotations

import re

from coderl.sandbox.languages.base import Language

# C# 8's nullable annotation on the built-in reference types: ``string? s``, ``object?[] a``
_STRING_LITERAL = re.compile(r"('(?:\\.|[^'\\])'|\"(?:\\.|[^\"\\])*\")")
_NULLABLE_REFERENCE = re.compile(r"\b(string|object)\?(?=\s*(?:\[|\]|>|,|\)|[A-Za-z_@]))")


class CSharp(Language):
    """Mono: mcs compiles once to main.exe, mono runs it (Debian packages no .NET SDK).

    mcs speaks C# 7, where ``string?`` is an error; in C# 8 it is only an annotation (nullable
    reference types change warnings, not code), so the annotation on ``string`` and ``object`` is
    dropped before compiling, as the programs ScaleBox's .NET accepts use it. ``int?`` is C# 7's
    Nullable<int> and stays."""

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
        return cls.source_name, "".join(p if i % 2 else _NULLABLE_REFERENCE.sub(r"\1", p) for i, p in enumerate(pieces))

    @classmethod
    def extra_binds(cls) -> tuple[str, ...]:
        return ("/etc/mono",)  # the runtime's config and machine.config
