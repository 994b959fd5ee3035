from __future__ import annotations

from coderl.sandbox.languages.base import Language


class JavaScript(Language):
    name = "javascript"
    aliases = ("nodejs", "node", "js")
    source_name = "main.js"
    run_argv = ("/usr/bin/node", "--stack-size=65500", "main.js")
    version_argv = ("node", "--version")
    memory_error_markers = ("JavaScript heap out of memory",)
    memory_overhead_mb = 64
    hello = 'console.log("hello, coderl");\n'
