from __future__ import annotations

import functools
import os
import shutil

from coderl.sandbox.languages.base import Language


class Go(Language):
    """Go builds into a private cache in the work dir (GOCACHE must be writable, and a shared one
    could be poisoned by a submission), so the first build of a submission pays for the runtime."""

    name = "go"
    aliases = ("golang",)
    source_name = "main.go"
    compile_argv = ("{goroot}/bin/go", "build", "-o", "main", "{src}")
    run_argv = ("./main",)
    artifacts = ("main",)
    version_argv = ("go", "version")
    env = {"GOCACHE": "/tmp/gocache", "GOPATH": "/tmp/gopath", "GO111MODULE": "off", "CGO_ENABLED": "0",
           "GOFLAGS": "-trimpath"}
    hello = 'package main\nimport "fmt"\nfunc main() { fmt.Println("hello, coderl") }\n'

    @staticmethod
    @functools.cache
    def goroot() -> str:
        go = shutil.which("go") or "/usr/bin/go"
        return os.path.dirname(os.path.dirname(os.path.realpath(go)))

    @classmethod
    def placeholders(cls, source_name: str, memory_mb: int) -> dict[str, str]:
        return {**super().placeholders(source_name, memory_mb), "goroot": cls.goroot()}

    @classmethod
    def recipe(cls, source_name: str, memory_mb: int) -> dict:
        recipe = super().recipe(source_name, memory_mb)
        recipe["env"]["GOROOT"] = cls.goroot()
        return recipe
