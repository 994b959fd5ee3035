from __future__ import annotations

import re

from coderl.sandbox.languages.base import Language

_PUBLIC_CLASS = re.compile(r"^\s*public\s+(?:final\s+|abstract\s+)*class\s+([A-Za-z_$][\w$]*)", re.M)


# What SandboxFusion puts on the classpath: javatuples (MultiPL-E's Java imports org.javatuples;
# Debian's libjavatuples-java, read-only under /usr) and any jar the request's files bring (``*``:
# the jars in the work dir, expanded by the java and javac launchers).
CLASSPATH = "classes:/usr/share/java/javatuples.jar:*"


class Java(Language):
    """The file is named after the public class (Main when there is none); the JVM gets a heap
    cap from the memory limit and a serial GC so it starts few threads. Assertions are on
    (``-ea``), as SandboxFusion runs Java: MultiPL-E's Java tests are ``assert`` statements."""

    name = "java"
    source_name = "Main.java"
    compile_argv = ("/usr/bin/javac", "-J-Xss64m", "-J-XX:+UseSerialGC", "-encoding", "UTF-8", "-cp", CLASSPATH,
                    "-d", "classes", "{src}")
    run_argv = ("/usr/bin/java", "-ea", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss64m",
                "-Xmx{memory_mb}m", "-XX:-UsePerfData", "-Xshare:auto", "-cp", CLASSPATH, "{main}")
    artifacts = ("classes",)
    version_argv = ("java", "-version")
    memory_error_markers = ("java.lang.OutOfMemoryError",)
    memory_overhead_mb = 192
    hello = 'public class Main { public static void main(String[] a) { System.out.println("hello, coderl"); } }\n'

    @classmethod
    def source_for(cls, source: str) -> tuple[str, str]:
        match = _PUBLIC_CLASS.search(source)
        return (f"{match.group(1)}.java" if match else cls.source_name), source
