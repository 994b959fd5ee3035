from __future__ import annotations

from coderl.sandbox.languages.base import Language
from coderl.sandbox.runtime_env import node_path


class JavaScript(Language):
    name = "javascript"
    aliases = ("nodejs", "node", "js")
    source_name = "main.js"
    run_argv = ("/usr/bin/node", "--stack-size=65500", "main.js")
    version_argv = ("node", "--version")
    memory_error_markers = ("JavaScript heap out of memory",)
    memory_overhead_mb = 64
    hello = 'console.log("hello, coderl");\n'

    @classmethod
    def recipe(cls, source_name: str, memory_mb: int) -> dict:
        """``require`` finds the runtime environment's packages (lodash, ...) through NODE_PATH."""
        recipe = super().recipe(source_name, memory_mb)
        modules = node_path()
        if modules:
            recipe["env"]["NODE_PATH"] = modules
        return recipe
