from __future__ import annotations

from coderl.sandbox.languages.base import Language


class D(Language):
    name = "d"
    aliases = ("dlang", "gdc")
    source_name = "main.d"
    compile_argv = ("/usr/bin/gdc", "-O2", "-pipe", "-o", "main", "{src}")
    run_argv = ("./main",)
    artifacts = ("main",)
    version_argv = ("gdc", "--version")
    memory_error_markers = ("OutOfMemoryError",)
    hello = 'import std.stdio;\nvoid main() { writeln("hello, coderl"); }\n'
