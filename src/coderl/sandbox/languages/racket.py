from __future__ import annotations

from coderl.sandbox.languages.base import Language


class Racket(Language):
    """`raco make` compiles the module once (syntax and unbound names are compile errors); each run
    loads the compiled .zo. Racket CS maps its heap and code itself, so it gets memory headroom."""

    name = "racket"
    aliases = ("rkt", "scheme")
    source_name = "main.rkt"
    compile_argv = ("/usr/bin/racket", "-l-", "raco", "make", "{src}")
    run_argv = ("/usr/bin/racket", "main.rkt")
    artifacts = ("compiled",)
    version_argv = ("racket", "--version")
    env = {"PLTUSERHOME": "/tmp"}
    memory_error_markers = ("out of memory",)
    memory_overhead_mb = 128
    hello = '#lang racket/base\n(displayln "hello, coderl")\n'

    @classmethod
    def extra_binds(cls) -> tuple[str, ...]:
        return ("/etc/racket",)  # config.rktd: where Debian keeps the compiled collections
