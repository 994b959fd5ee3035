"""What the JVM languages share: the runtime flags, where Debian puts the jars, and the compiler's
start on a class-data archive of its own classes."""

from __future__ import annotations

import os
import shutil
import zipfile
from typing import ClassVar

from coderl.sandbox.languages import prebuilt
from coderl.sandbox.languages.base import Language

#: a serial GC (few threads), client JIT only (fast start), the program's heap cap, no perf file
RUN_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss64m", "-Xmx{memory_mb}m", "-XX:-UsePerfData",
             "-Xshare:auto")
#: the compilers are JVM programs too; they run with the same start-up settings, heap left default
COMPILER_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss64m", "-XX:-UsePerfData")
MEMORY_ERROR_MARKERS = ("java.lang.OutOfMemoryError",)
JAVA = "/usr/bin/java"


def jar_version(jar: str, member: str, key: str) -> str:
    """A version read from a jar (starting the tool's JVM to ask takes seconds on every engine start)."""
    try:
        with zipfile.ZipFile(jar) as archive:
            text = archive.read(member).decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        return f"unknown ({exc})"
    for line in text.splitlines():
        if line.startswith(key):
            return line.split(key, 1)[1].strip(" :=")
    return "unknown"


def present(*paths: str) -> bool:
    return shutil.which(JAVA) is not None and all(os.path.exists(p) for p in paths)



class ArchivedCompiler(Language):
    """A language whose compiler is a JVM program, started on a class-data archive of its own
    classes (`prebuilt.jvm_archive`), made by compiling ``compiler_sample`` with the language's own
    compile command (the same JVM flags and classpath the archive must be used with)."""

    compiler_jars: ClassVar[tuple[str, ...]] = ()  # the compiler's classpath: the archive is checked against them
    compiler_sample: ClassVar[str]
    compiler_option_prefix: ClassVar[str] = ""  # javac's -J: its JVM's options

    @classmethod
    def compiler_archive(cls) -> str | None:
        """The archive on the host (built on first use), None where it cannot be built here; the
        sandbox sees its directory at ``prebuilt.inside``."""
        prefix = cls.compiler_option_prefix
        assert cls.compile_argv is not None
        argv = (cls.compile_argv[0], f"{prefix}-XX:ArchiveClassesAtExit={{archive}}",
                *(a.replace("{src}", "{src_name}") for a in cls.compile_argv[1:]))
        directory = prebuilt.jvm_archive(cls.name, cls.compiler_jars, argv, cls.source_name, cls.compiler_sample)
        return os.path.join(directory, "classes.jsa") if directory else None

    @classmethod
    def binds(cls) -> tuple[tuple[str, str], ...]:
        archive = cls.compiler_archive()
        return ((os.path.dirname(archive), prebuilt.inside(os.path.dirname(archive))),) if archive else ()

    @classmethod
    def recipe(cls, source_name: str, memory_mb: int) -> dict:
        recipe = super().recipe(source_name, memory_mb)
        archive = cls.compiler_archive()
        if archive:
            inside = os.path.join(prebuilt.inside(os.path.dirname(archive)), os.path.basename(archive))
            recipe["compile"].insert(1, f"{cls.compiler_option_prefix}-XX:SharedArchiveFile={inside}")
        return recipe
