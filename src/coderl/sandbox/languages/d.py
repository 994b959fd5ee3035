from __future__ import annotations

from coderl.sandbox.languages.base import Language


class D(Language):
    """Compiled with its ``unittest`` blocks, which run before ``main`` (druntime's run-main mode;
    the option is stripped from main's args): a failing one exits 1 and main does not run. MultiPL-E
    D tests are exactly such blocks with an empty main (SandboxFusion's D_ut, `dmd -unittest`);
    compiled without them, every submission, right or wrong, passed. A program without unittest
    blocks runs as before."""

    name = "d"
    aliases = ("dlang", "gdc")
    source_name = "main.d"
    compile_argv = ("/usr/bin/gdc", "-O2", "-pipe", "-funittest", "-o", "main", "{src}")
    run_argv = ("./main", "--DRT-testmode=run-main")
    artifacts = ("main",)
    version_argv = ("gdc", "--version")
    memory_error_markers = ("OutOfMemoryError",)
    hello = 'import std.stdio;\nvoid main() { writeln("hello, coderl"); }\n'
