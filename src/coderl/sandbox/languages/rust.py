from __future__ import annotations

import functools
import os
import shutil
import subprocess

from coderl.sandbox.languages.base import Language


class Rust(Language):
    name = "rust"
    aliases = ("rs",)
    source_name = "main.rs"
    compile_argv = ("{rustc}", "-O", "--edition", "2021", "-o", "main", "{src}")
    run_argv = ("./main",)
    artifacts = ("main",)
    version_argv = ("rustc", "--version")
    hello = 'fn main() { println!("hello, coderl"); }\n'

    @staticmethod
    @functools.cache
    def rustc() -> str:
        """The real toolchain binary (rustup's proxy would need its whole home directory)."""
        rustc = shutil.which("rustc") or "/usr/bin/rustc"
        try:
            sysroot = subprocess.run([rustc, "--print", "sysroot"], capture_output=True, text=True,
                                     timeout=20).stdout.strip()
            if sysroot and os.path.exists(os.path.join(sysroot, "bin", "rustc")):
                return os.path.join(sysroot, "bin", "rustc")
        except (OSError, subprocess.TimeoutExpired):
            pass
        return os.path.realpath(rustc)

    @classmethod
    def extra_binds(cls) -> tuple[str, ...]:
        sysroot = os.path.dirname(os.path.dirname(cls.rustc()))
        return () if sysroot.startswith("/usr") else (sysroot,)

    @classmethod
    def placeholders(cls, source_name: str, memory_mb: int) -> dict[str, str]:
        return {**super().placeholders(source_name, memory_mb), "rustc": cls.rustc()}
