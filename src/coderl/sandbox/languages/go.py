from __future__ import annotations

import functools
import os
import shutil

from coderl.sandbox.languages.base import Language
from coderl.sandbox.runtime_env import go_cache


class Go(Language):
    """Go builds into a private, empty cache per submission (GOCACHE must be writable, and a shared
    one could be poisoned by a submission). The standard library comes precompiled and read-only
    from GOROOT/pkg (Debian's golang packages ship it): built with the default flags, so no flag
    here may change a package's build ID (``-trimpath`` did, and every submission rebuilt the
    runtime, 15-40 s). The few packages whose shipped archive is stale under CGO_ENABLED=0 (net,
    os/user, crypto/sha1 and what imports them, ~6 s to build) are in a cache that
    ``scripts/build_runtime.sh`` prebuilt into the read-only runtime environment: the private cache
    starts as links to its entries, which the go command reads and cannot change (new entries are
    new files, in the private cache)."""

    name = "go"
    aliases = ("golang",)
    source_name = "main.go"
    compile_argv = ("/bin/sh", "-c", "{seed_cache}exec {goroot}/bin/go build -o main {src}")
    run_argv = ("./main",)
    artifacts = ("main",)
    version_argv = ("go", "version")
    env = {"GOCACHE": "/tmp/gocache", "GOPATH": "/tmp/gopath", "GO111MODULE": "off", "CGO_ENABLED": "0"}
    hello = 'package main\nimport "fmt"\nfunc main() { fmt.Println("hello, coderl") }\n'

    @staticmethod
    @functools.cache
    def goroot() -> str:
        go = shutil.which("go") or "/usr/bin/go"
        return os.path.dirname(os.path.dirname(os.path.realpath(go)))

    @classmethod
    def placeholders(cls, source_name: str, memory_mb: int) -> dict[str, str]:
        prebuilt = go_cache()
        seed = f"cp -rs {prebuilt}/. /tmp/gocache/ 2>/dev/null; " if prebuilt else ""
        return {**super().placeholders(source_name, memory_mb), "goroot": cls.goroot(), "seed_cache": seed}

    @classmethod
    def recipe(cls, source_name: str, memory_mb: int) -> dict:
        recipe = super().recipe(source_name, memory_mb)
        recipe["env"]["GOROOT"] = cls.goroot()
        return recipe
