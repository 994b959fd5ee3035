from __future__ import annotations

from coderl.sandbox.languages.base import Language


class C(Language):
    name = "c"
    source_name = "main.c"
    compile_argv = ("/usr/bin/gcc", "-O2", "-std=gnu17", "-pipe", "-o", "main", "{src}", "-lm")
    run_argv = ("./main",)
    artifacts = ("main",)
    version_argv = ("gcc", "--version")
    hello = '#include <stdio.h>\nint main(void) { puts("hello, coderl"); return 0; }\n'
