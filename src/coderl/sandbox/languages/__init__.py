"""The language registry: name or alias -> Language class."""

from __future__ import annotations

from coderl.errors import UnknownLanguage
from coderl.sandbox.languages.base import Language, LanguageInfo
from coderl.sandbox.languages.bash import Bash
from coderl.sandbox.languages.c import C
from coderl.sandbox.languages.cpp import Cpp
from coderl.sandbox.languages.csharp import CSharp
from coderl.sandbox.languages.d import D
from coderl.sandbox.languages.go import Go
from coderl.sandbox.languages.go_test import GoTest
from coderl.sandbox.languages.java import Java
from coderl.sandbox.languages.javascript import JavaScript
from coderl.sandbox.languages.junit import JUnit
from coderl.sandbox.languages.kotlin import Kotlin
from coderl.sandbox.languages.lua import Lua
from coderl.sandbox.languages.perl import Perl
from coderl.sandbox.languages.php import Php
from coderl.sandbox.languages.pytest_runner import Pytest
from coderl.sandbox.languages.python import Python
from coderl.sandbox.languages.r import R
from coderl.sandbox.languages.racket import Racket
from coderl.sandbox.languages.ruby import Ruby
from coderl.sandbox.languages.rust import Rust
from coderl.sandbox.languages.scala import Scala
from coderl.sandbox.languages.typescript import TypeScript
from coderl.sandbox.languages.verilog import Verilog

ALL: tuple[type[Language], ...] = (Python, C, Cpp, Java, JavaScript, Go, Rust, Bash, Php, Ruby, Perl, Lua, R,
                                  TypeScript, CSharp, Scala, Kotlin, D, Racket, Verilog)
#: SandboxFusion's test-runner languages: the program is a test file its runner runs, the runner's
#: exit status the verdict (``Language.test_runner``); served like every language, never judged
TEST_RUNNERS: tuple[type[Language], ...] = (GoTest, JUnit, Pytest)
SERVED = ALL + TEST_RUNNERS
_BY_NAME = {alias: lang for lang in SERVED for alias in (lang.name, *lang.aliases)}
#: languages SandboxFusion/ScaleBox accept that we cannot run, and why (listed in docs/api.md)
UNAVAILABLE = {
    "julia": "Debian 12 does not package Julia",
    "swift": "Debian 12 does not package Swift (its 'swift' package is OpenStack's object store)",
    "lean": "Debian 12 does not package Lean",
    "cuda": "needs a GPU and nvidia-cuda-toolkit, which is outside Debian main",
    "python_gpu": "needs a GPU",
    "jest": "not offered yet: Debian's jest (29.3.1) depends on Debian's own nodejs and has not been run in the sandbox",
}


def build_all() -> dict[str, tuple[tuple[str, str], ...]]:
    """Build what the installed languages' compilers reuse (`prebuilt`: C++'s precompiled headers,
    the JVM compilers' class archives) now: the image build runs this, so a fresh container's first
    engine start does not spend a minute on it. Returns each installed language's read-only binds
    as (host path, path inside)."""
    return {lang.name: binds for lang in SERVED if lang.available() and (binds := lang.binds())}


def resolve(name: str, available: dict[str, type[Language]] | None = None) -> type[Language]:
    """The language for a name or alias (case-insensitive); UnknownLanguage names the choices."""
    choices = available if available is not None else {lang.name: lang for lang in SERVED}
    key = str(name).strip().lower()
    lang = _BY_NAME.get(key)
    if lang is None or lang.name not in choices:
        reason = UNAVAILABLE.get(key) or (f"its toolchain is not installed on this host ({lang.version_argv[0]})"
                                          if lang is not None else None)
        raise UnknownLanguage(str(name), list(choices), reason)
    return lang


__all__ = ["ALL", "SERVED", "TEST_RUNNERS", "UNAVAILABLE", "Language", "LanguageInfo", "build_all", "resolve"]
