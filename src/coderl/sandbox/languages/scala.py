from __future__ import annotations

import re

from coderl.sandbox.languages import jvm

_LIB = "/usr/share/scala/lib"
_JARS = (f"{_LIB}/scala-compiler.jar", f"{_LIB}/scala-library.jar", f"{_LIB}/scala-reflect.jar")
#: what scalac compiles once to make its class-data archive (`jvm.ArchivedCompiler`)
_SAMPLE = """import scala.io.StdIn
import scala.collection.mutable

case class Edge(to: Int, w: Long)

object Main {
  def best(xs: Seq[Long]): Long = if (xs.isEmpty) 0L else xs.max
  def main(args: Array[String]): Unit = {
    val line = Option(StdIn.readLine()).getOrElse("3")
    val n = line.trim.split(" ").map(_.toInt).sum
    val g = mutable.HashMap[Int, mutable.ArrayBuffer[Edge]]()
    val pq = mutable.PriorityQueue[(Long, Int)]()(Ordering.by(p => -p._1))
    val a = Array.tabulate(n)(i => i.toLong * 2)
    for (i <- 0 until n) {
      g.getOrElseUpdate(i, mutable.ArrayBuffer()) += Edge(i, a(i))
      pq.enqueue((a(i), i))
    }
    val sorted = a.sorted(Ordering[Long].reverse).toList
    val text = n % 3 match { case 0 => "zero"; case _ => "%d %.2f".format(best(sorted), math.sqrt(n.toDouble)) }
    val sb = new StringBuilder
    sb.append(text).append(' ').append(pq.size).append(' ').append(g.size)
    println(sb.toString)
  }
}
"""
_OBJECT = re.compile(r"^\s*object\s+([A-Za-z_][\w]*)", re.M)


class Scala(jvm.ArchivedCompiler):
    """Scala 2.11 (Debian 12's): scalac runs as a plain JVM program (no launcher script); the file
    is named after the first top-level object, which is the one run (Main when there is none). The
    compiler's JVM starts on a class-data archive of its classes (`jvm.ArchivedCompiler`)."""

    name = "scala"
    source_name = "Main.scala"
    compile_argv = (jvm.JAVA, *jvm.COMPILER_FLAGS, "-cp", ":".join(_JARS),
                    "scala.tools.nsc.Main", "-usejavacp", "-nobootcp", "-d", "main.jar", "{src}")
    run_argv = (jvm.JAVA, *jvm.RUN_FLAGS, "-cp", f"main.jar:{_LIB}/scala-library.jar", "{main}")
    artifacts = ("main.jar",)
    compiler_jars = _JARS
    compiler_sample = _SAMPLE
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
