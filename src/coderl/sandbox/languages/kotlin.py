from __future__ import annotations

from coderl.sandbox.languages import jvm
from coderl.sandbox.languages.base import Language

_HOME = "/usr/share/kotlin/kotlinc"
# named one by one: Debian's jars are links into /usr/share/java, where the compiler jar's manifest
# Class-Path (relative names) finds none of them
_COMPILER_JARS = ("kotlin-compiler", "kotlin-stdlib", "kotlin-script-runtime", "kotlin-reflect", "trove4j",
                  "annotations-13.0")


class Kotlin(Language):
    """Kotlin 1.3 (Debian 12's): the compiler runs as a plain JVM program (no launcher script) into
    one jar; a top-level ``fun main`` in main.kt is the class MainKt."""

    name = "kotlin"
    aliases = ("kt", "kotlin_script")
    source_name = "main.kt"
    compile_argv = (jvm.JAVA, *jvm.COMPILER_FLAGS, "-cp", ":".join(f"{_HOME}/lib/{jar}.jar" for jar in _COMPILER_JARS),
                    "org.jetbrains.kotlin.cli.jvm.K2JVMCompiler", "-kotlin-home", _HOME, "-no-reflect",
                    "-d", "main.jar", "{src}")
    run_argv = (jvm.JAVA, *jvm.RUN_FLAGS, "-cp", f"main.jar:{_HOME}/lib/kotlin-stdlib.jar", "MainKt")
    artifacts = ("main.jar",)
    version_argv = ("kotlinc", "-version")
    memory_error_markers = jvm.MEMORY_ERROR_MARKERS
    memory_overhead_mb = 192
    hello = 'fun main() { println("hello, coderl") }\n'

    @classmethod
    def available(cls) -> bool:
        return jvm.present(*(f"{_HOME}/lib/{jar}.jar" for jar in _COMPILER_JARS))

    @classmethod
    def version(cls) -> str:
        jar = f"{_HOME}/lib/kotlin-compiler.jar"
        return "Kotlin " + jvm.jar_version(jar, "META-INF/MANIFEST.MF", "Implementation-Version")
