from __future__ import annotations

import glob

from coderl.sandbox.languages import java, jvm
from coderl.sandbox.languages.java import Java

_JAVA = "/usr/share/java"
#: Debian's junit5 launcher: its manifest's Class-Path brings the Jupiter and Vintage engines
LAUNCHER = f"{_JAVA}/junit-platform-console-standalone.jar"
# What a test compiles against: JUnit 5's API (and its annotations' jars) and JUnit 4 (run by the
# Vintage engine), Debian's junit5/junit4 packages, then what Java's classpath has (javatuples and
# the request's jars, ``*``).
CLASSPATH = ":".join(["classes", *(f"{_JAVA}/{jar}.jar" for jar in (
    "junit-jupiter-api", "junit-jupiter-params", "junit4", "hamcrest-core", "apiguardian-api", "opentest4j",
    "javatuples")), "*"])


class JUnit(Java):
    """SandboxFusion's ``junit``: the program is Java holding JUnit test classes (5's Jupiter or
    4's), compiled by Java's recipe against the JUnit jars, then run by the console launcher, which
    scans the compiled classes and runs every test (exit 0: all passed, 1: one failed). The
    launcher is started as a main class on the classpath, so ``*`` (the request's jars) expands as
    it does for Java programs; the JVM flags and heap cap are Java's."""

    name = "junit"
    test_runner = True
    compile_argv = tuple(CLASSPATH if a == java.CLASSPATH else a for a in Java.compile_argv)
    run_argv = (jvm.JAVA, *jvm.RUN_FLAGS, "-cp", f"{LAUNCHER}:{CLASSPATH}", "org.junit.platform.console.ConsoleLauncher",
                "--disable-banner", "--disable-ansi-colors", "--scan-class-path", "classes")
    hello = ('import org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.assertEquals;\n'
             'public class HelloTest {\n    @Test\n    void hello() {\n        assertEquals(2, 1 + 1);\n'
             '        System.out.println("hello, coderl");\n    }\n}\n')

    @classmethod
    def compiler_archive(cls) -> str | None:
        """Java's: the same javac JVM (the JUnit jars are javac's classpath, not its JVM's), so no
        second archive is built on a fresh machine."""
        return Java.compiler_archive()

    @classmethod
    def available(cls) -> bool:
        return jvm.present(LAUNCHER)

    @classmethod
    def version(cls) -> str:
        """Debian's jar has no version inside; its versioned link beside it names it."""
        prefix = LAUNCHER.removesuffix(".jar") + "-"
        named = sorted(glob.glob(f"{prefix}*.jar"))
        return f"JUnit Platform {named[-1].removeprefix(prefix).removesuffix('.jar')}" if named else "JUnit Platform (unknown)"
