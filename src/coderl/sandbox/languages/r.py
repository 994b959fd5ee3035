from __future__ import annotations

from coderl.sandbox.languages.base import Language


class R(Language):
    name = "r"
    aliases = ("rscript",)
    source_name = "main.R"
    run_argv = ("/usr/bin/Rscript", "--vanilla", "main.R")
    version_argv = ("Rscript", "--version")
    memory_error_markers = ("cannot allocate vector of size",)
    memory_overhead_mb = 64
    hello = 'cat("hello, coderl\\n")\n'

    @classmethod
    def extra_binds(cls) -> tuple[str, ...]:
        return ("/etc/R",)  # R_HOME/etc links there (ldpaths, Renviron, Rprofile.site)
