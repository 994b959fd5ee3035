from __future__ import annotations

import re

from coderl.sandbox.languages import jvm

_HOME = "/usr/share/kotlin/kotlinc"
# named one by one: Debian's jars are links into /usr/share/java, where the compiler jar's manifest
# Class-Path (relative names) finds none of them
_COMPILER_JARS = ("kotlin-compiler", "kotlin-stdlib", "kotlin-script-runtime", "kotlin-reflect", "trove4j",
                  "annotations-13.0")


_JARS = tuple(f"{_HOME}/lib/{jar}.jar" for jar in _COMPILER_JARS)
#: what kotlinc compiles once to make its class-data archive (`jvm.ArchivedCompiler`)
_SAMPLE = """import java.io.*
import java.util.*

data class Edge(val to: Int, val w: Long)

fun best(xs: List<Long>): Long = xs.max() ?: 0L

fun main() {
    val br = BufferedReader(InputStreamReader(System.`in`))
    val n = (br.readLine() ?: "3").trim().split(" ").map { it.toInt() }.sum()
    val g = HashMap<Int, MutableList<Edge>>()
    val pq = PriorityQueue<Pair<Long, Int>>(compareBy { it.first })
    val a = LongArray(n) { it.toLong() * 2 }
    for (i in 0 until n) {
        g.getOrPut(i) { mutableListOf() }.add(Edge(i, a[i]))
        pq.add(a[i] to i)
    }
    val sorted = a.sortedDescending()
    val text = when (n % 3) { 0 -> "zero" else -> String.format("%d %.2f", best(sorted), Math.sqrt(n.toDouble())) }
    val sb = StringBuilder()
    sb.append(text).append(' ').append(pq.size).append(' ').append(g.size)
    println(sb.toString())
}
"""
_TOP_LEVEL_MAIN = re.compile(r"^fun\s+main\s*\(", re.M)
_HEADER_LINE = re.compile(r"^\s*(?:$|//|package\s|import\s|@file:)")


class Kotlin(jvm.ArchivedCompiler):
    """Kotlin 1.3 (Debian 12's): the compiler runs as a plain JVM program (no launcher script) into
    one jar; a top-level ``fun main`` in main.kt is the class MainKt.

    Debian's compiler cannot compile scripts (``.kts``, ScaleBox's ``kotlin_script``), so a program
    without a top-level ``main`` has its statements wrapped in one: its functions and classes become
    local ones, which Kotlin allows, and the wrapper opens on the first line after the imports, so
    the compiler's line numbers are the program's own. The compiler's JVM starts on a class-data
    archive of its classes (`jvm.ArchivedCompiler`)."""

    name = "kotlin"
    aliases = ("kt", "kotlin_script")
    source_name = "main.kt"
    compile_argv = (jvm.JAVA, *jvm.COMPILER_FLAGS, "-cp", ":".join(_JARS),
                    "org.jetbrains.kotlin.cli.jvm.K2JVMCompiler", "-kotlin-home", _HOME, "-no-reflect",
                    "-d", "main.jar", "{src}")
    run_argv = (jvm.JAVA, *jvm.RUN_FLAGS, "-cp", f"main.jar:{_HOME}/lib/kotlin-stdlib.jar", "MainKt")
    artifacts = ("main.jar",)
    compiler_jars = _JARS
    compiler_sample = _SAMPLE
    version_argv = ("kotlinc", "-version")
    memory_error_markers = jvm.MEMORY_ERROR_MARKERS
    memory_overhead_mb = 192
    hello = 'fun main() { println("hello, coderl") }\n'

    @classmethod
    def source_for(cls, source: str) -> tuple[str, str]:
        if _TOP_LEVEL_MAIN.search(source):
            return cls.source_name, source
        lines = source.split("\n")
        body = next((i for i, line in enumerate(lines) if not _HEADER_LINE.match(line)), len(lines))
        lines[body:] = ["fun main(args: Array<String>) { " + "\n".join(lines[body:]) + "\n}"]
        return cls.source_name, "\n".join(lines)

    @classmethod
    def available(cls) -> bool:
        return jvm.present(*_JARS)

    @classmethod
    def version(cls) -> str:
        jar = f"{_HOME}/lib/kotlin-compiler.jar"
        return "Kotlin " + jvm.jar_version(jar, "META-INF/MANIFEST.MF", "Implementation-Version")
