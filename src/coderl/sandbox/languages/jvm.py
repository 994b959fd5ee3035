"""What the JVM languages besides Java share: the runtime flags and where Debian puts the jars."""

from __future__ import annotations

import os
import shutil
import zipfile

from coderl.sandbox.languages import prebuilt

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


def compiler_archive(kind: str, compile_argv: tuple[str, ...], source_name: str, jars: tuple[str, ...],
                     sample: str, *, option_prefix: str = "") -> str | None:
    """The class-data archive of a JVM compiler (`prebuilt.jvm_archive`), made by compiling
    ``sample`` with ``compile_argv`` itself (the same JVM flags and classpath the archive must be used
    with; ``option_prefix`` is javac's ``-J``); None where it cannot be built here."""
    argv = (compile_argv[0], f"{option_prefix}-XX:ArchiveClassesAtExit={{archive}}",
            *(a.replace("{src}", "{src_name}") for a in compile_argv[1:]))
    directory = prebuilt.jvm_archive(kind, jars, argv, source_name, sample)
    return os.path.join(directory, "classes.jsa") if directory else None


def use_archive(recipe: dict, archive: str | None, *, option_prefix: str = "") -> dict:
    """The recipe with its compiler's JVM started on ``archive`` (unchanged without one)."""
    if archive:
        recipe["compile"].insert(1, f"{option_prefix}-XX:SharedArchiveFile={archive}")
    return recipe
