from __future__ import annotations

import re

from coderl.sandbox.languages import jvm
from coderl.sandbox.languages.base import Language

_LIB = "/usr/share/scala/lib"
_OBJECT = re.compile(r"^\s*object\s+([A-Za-z_][\w]*)", re.M)


class Scala(Language):
    """Scala 2.11 (Debian 12's): scalac runs as a plain JVM program (no launcher script); the file
    is named after the first top-level object, which is the one run (Main when there is none)."""

    name = "scala"
    source_name = "Main.scala"
    compile_argv = (jvm.JAVA, *jvm.COMPILER_FLAGS, "-cp",
                    f"{_LIB}/scala-compiler.jar:{_LIB}/scala-library.jar:{_LIB}/scala-reflect.jar",
                    "scala.tools.nsc.Main", "-usejavacp", "-nobootcp", "-d", "main.jar", "{src}")
    run_argv = (jvm.JAVA, *jvm.RUN_FLAGS, "-cp", f"main.jar:{_LIB}/scala-library.jar", "{main}")
    artifacts = ("main.jar",)
    version_argv = ("scala", "-version")
    memory_error_markers = jvm.MEMORY_ERROR_MARKERS
    memory_overhead_mb = 192
    hello = 'object Main { def main(args: Array[String]): Unit = println("hello, coderl") }\n'

    @classmethod
    def available(cls) -> bool:
        return jvm.present(f"{_LIB}/scala-compiler.jar", f"{_LIB}/scala-library.jar")

    @classmethod
    def version(cls) -> str:
        return "Scala " + jvm.jar_version(f"{_LIB}/scala-library.jar", "library.properties", "version.number")

    @classmethod
    def source_for(cls, source: str) -> tuple[str, str]:
        match = _OBJECT.search(source)
        return (f"{match.group(1)}.scala" if match else cls.source_name), source
