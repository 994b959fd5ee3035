"""What a compiler reuses across submissions, built once per machine from system files only: C++
precompiled headers and the JVM compilers' class-data-sharing archives.

Nothing here is built from a submission: the inputs are the installed toolchain and a fixed sample
program of ours, built on the host (``coderl.cache.built_once``: a fresh directory renamed into
place whole) and bound read-only into every slot at ``/coderl/toolchain/<kind>-<digest>``
(`inside`), beside our runner: the compile argv names that path, which says nothing about the
host's cache path (a home directory, a checkout), and ``--isolation none``, which has no mount
namespace, runs the same argv with the host path put back (``isolation.at_host_paths``). The
directory is named by the compiler's files (path, size, mtime) and the flags, so an upgraded
toolchain gets a fresh build and never a stale one. Where a build fails (no compiler, a read-only
cache) the language compiles as before, only slower: each getter returns None and the recipe
leaves the flag out.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from coderl.cache import built_once, default_cache_dir
from coderl.sandbox.isolation import INSIDE_DIR

#: where the sandbox sees the prebuilt directories: read-only, under our own read-only directory
INSIDE_ROOT = INSIDE_DIR + "/toolchain"
_TIMEOUT_S = 600  # kotlinc's archive takes ~25 s on a loaded 2-vCPU machine; a PCH ~8 s
#: the headers a competitive program includes first (only the first #include can use a PCH)
PCH_HEADERS = ("bits/stdc++.h", "iostream")
#: where each header is copied, its .gch beside it; falls back to the copy when GCC rejects the .gch
_PCH_SCRIPT = r"""set -e
out=$1; compiler=$2; shift 2
flags=$1; shift
for header in "$@"; do
  src=$(printf '#include <%s>\n' "$header" | "$compiler" $flags -x c++ -E -H -o /dev/null - 2>&1 | sed -n '1s/^\. //p')
  mkdir -p "$out/$(dirname "$header")"
  cp "$src" "$out/$header"
  "$compiler" $flags -x c++-header "$out/$header" -o "$out/$header.gch" 2>/dev/null
done
"""


def _stamp(paths: Iterable[str]) -> bytes:
    """What names a build: each input file's real path, size and mtime (an upgrade changes them)."""
    parts = []
    for path in paths:
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
        except OSError:
            return b""
        parts.append(f"{real}\0{st.st_size}\0{st.st_mtime_ns}")
    return "\n".join(parts).encode()


def _built(kind: str, inputs: Iterable[str], config: str, command: Callable[[Path], list[str]],
           done: str) -> str | None:
    stamp = _stamp(inputs)
    if not stamp:
        return None
    digest = hashlib.sha256(stamp + b"\n" + config.encode()).hexdigest()[:16]
    target = default_cache_dir().absolute() / "toolchain" / f"{kind}-{digest}"
    return str(target) if built_once(target, command, done=done, timeout_s=_TIMEOUT_S) else None


def inside(directory: str) -> str:
    """Where the sandbox sees a prebuilt ``directory`` of the host: named by its kind and digest
    only, so neither the bind nor the compile argv shows where the host keeps its cache."""
    return f"{INSIDE_ROOT}/{os.path.basename(directory)}"


@functools.cache
def cpp_pch(compiler: str, flags: tuple[str, ...]) -> str | None:
    """A directory holding ``PCH_HEADERS`` (copies) and their precompiled ``.gch``, built with
    exactly ``flags`` (a PCH built with other code-generation flags is silently not used), to put
    first on the include path with ``-isystem``; None where it cannot be built here."""
    flag_text = " ".join(flags)

    def command(tmp: Path) -> list[str]:
        return ["/bin/sh", "-c", _PCH_SCRIPT, "sh", str(tmp), compiler, flag_text, *PCH_HEADERS]

    return _built("pch", [compiler], f"{flag_text}\0{PCH_HEADERS}", command, done=PCH_HEADERS[0] + ".gch")


@functools.cache
def jvm_archive(kind: str, jars: tuple[str, ...], argv: tuple[str, ...], sample_name: str, sample: str) -> str | None:
    """A dynamic class-data-sharing archive of a JVM compiler's classes (``<dir>/classes.jsa``),
    made by compiling ``sample`` (as ``sample_name``) once with ``argv`` (``{archive}`` and
    ``{src_name}`` filled in, run in the sample's directory);
    a JVM started with ``-XX:SharedArchiveFile`` on it maps those classes instead of loading and
    verifying them from the jars (javac 0.87 -> 0.38 CPU s, kotlinc 2.9 -> 1.9 for a hello world).
    The JVM checks the jars' sizes and mtimes against the archive and ignores a stale one."""

    def command(tmp: Path) -> list[str]:
        (tmp / "sample").mkdir()
        (tmp / "sample" / sample_name).write_text(sample)
        fill = {"{archive}": str(tmp / "classes.jsa"), "{src_name}": sample_name}
        # compiled in the sample's directory (the argv names its outputs relative to it), which is
        # removed before the directory is renamed into place
        script = 'cd "$0/sample" && "$@" >/dev/null 2>&1; cd /; rm -rf "$0/sample"; test -s "$0/classes.jsa"'
        return ["/bin/sh", "-c", script, str(tmp), *(_fill(a, fill) for a in argv)]

    home = os.path.dirname(os.path.dirname(os.path.realpath("/usr/bin/java")))
    runtime = [os.path.join(home, *part) for part in (("bin", "java"), ("lib", "server", "libjvm.so"), ("lib", "modules"))]
    return _built(kind, [*runtime, *jars], "\0".join(argv) + sample, command, done="classes.jsa")


def _fill(arg: str, fill: dict[str, str]) -> str:
    for key, value in fill.items():
        arg = arg.replace(key, value)
    return arg
