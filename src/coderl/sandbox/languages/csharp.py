from __future__ import annotations

from coderl.sandbox.languages.base import Language


class CSharp(Language):
    """Mono: mcs compiles once to main.exe, mono runs it (Debian packages no .NET SDK)."""

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
    def extra_binds(cls) -> tuple[str, ...]:
        return ("/etc/mono",)  # the runtime's config and machine.config
