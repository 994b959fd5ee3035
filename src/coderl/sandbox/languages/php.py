from __future__ import annotations

from coderl.sandbox.languages.base import Language


class Php(Language):
    """PHP's own memory limit is set to the run's, so running out reads as PHP's clean fatal error
    (a memory-limit verdict) before the kernel's limit is reached."""

    name = "php"
    source_name = "main.php"
    run_argv = ("/usr/bin/php", "-d", "memory_limit={memory_mb}M", "-d", "display_errors=stderr", "-f", "main.php")
    version_argv = ("php", "--version")
    memory_error_markers = ("Allowed memory size of",)
    memory_overhead_mb = 32
    hello = '<?php\necho "hello, coderl\\n";\n'

    @classmethod
    def extra_binds(cls) -> tuple[str, ...]:
        return ("/etc/php",)  # php.ini and the conf.d lines that load the bundled extensions
