from __future__ import annotations

from coderl.sandbox.languages.base import Language


class Bash(Language):
    name = "bash"
    aliases = ("sh", "shell")
    source_name = "main.sh"
    run_argv = ("/bin/bash", "main.sh")
    version_argv = ("bash", "--version")
    memory_error_markers = ("xmalloc: cannot allocate",)
    hello = 'echo "hello, coderl"\n'
