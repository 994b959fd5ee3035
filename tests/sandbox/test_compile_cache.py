"""The compile cache (coderl.sandbox.compile_cache) on the real sandbox: an identical submission
skips the compiler and runs the same artifact; nothing a program does reaches the cached one; the
entries are bounded, checked and optional."""

from __future__ import annotations

import hashlib
import os

import pytest

from coderl.sandbox import Limits, Program
from coderl.sandbox.compile_cache import HIT_MESSAGE, CompileCache, Compiled
from coderl.sandbox.engine import Engine
from coderl.sandbox.result import CompileResult, RunResult, RunStatus

LIMITS = Limits(cpu_s=2, wall_s=5)
#: run 1 replaces its own binary with a script and scribbles over what it can; each run says which it is
TAMPER = r"""#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>
int main() {
    int which = 0;
    if (scanf("%d", &which) != 1) return 1;
    printf("genuine %d\n", which);
    fflush(stdout);
    if (which == 1) {
        FILE *f = fopen("main", "r+b");  /* ETXTBSY while it runs; a copy's name swapped in instead */
        if (f) { fputs("corrupt", f); fclose(f); }
        unlink("main");
        f = fopen("main", "w");
        fputs("#!/bin/sh\necho forged\n", f);
        fclose(f);
        chmod("main", 0755);
    }
    return 0;
}
"""


@pytest.fixture()
def cache(engine, tmp_path):
    """The session engine with a compile cache of this test's own."""
    own = CompileCache(tmp_path / "compile-cache", 64 << 20)
    before, engine.engine.compile_cache = engine.engine.compile_cache, own
    yield own
    engine.engine.compile_cache = before


def _entries(cache: CompileCache) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in cache.directory.glob("*/*")}


def test_an_identical_submission_skips_the_compiler(engine, cache):
    source = '#include <bits/stdc++.h>\nint main() { long long a, b; std::cin >> a >> b; std::cout << a * b << "\\n"; }\n'
    first = engine.execute(Program("cpp", source), [b"6 7\n", b"3 3\n"], LIMITS)
    again = engine.execute(Program("cpp", source), [b"6 7\n", b"3 3\n"], LIMITS)
    assert first.compile.ok and first.compile.run.message != HIT_MESSAGE
    assert again.compile.ok and again.compile.run.message == HIT_MESSAGE and again.compile.run.cpu_s == 0
    assert [r.stdout for r in again.results] == [r.stdout for r in first.results] == [b"42\n", b"9\n"]
    assert (cache.hits, cache.misses) == (1, 1)
    other = engine.execute(Program("cpp", source + "// another program\n"), [b"2 2\n"], LIMITS)
    assert other.compile.run.message != HIT_MESSAGE and other.results[0].stdout == b"4\n"


def test_a_submission_that_tampers_with_its_binary_does_not_change_the_cached_one(engine, cache):
    first = engine.execute(Program("cpp", TAMPER), [b"1\n", b"2\n"], LIMITS)
    # the second run of the same submission gets its own binary back (the work dir is rebuilt)
    assert [r.stdout for r in first.results] == [b"genuine 1\n", b"genuine 2\n"], first.results
    stored = _entries(cache)
    again = engine.execute(Program("cpp", TAMPER), [b"2\n", b"1\n", b"3\n"], LIMITS)
    assert again.compile.run.message == HIT_MESSAGE
    assert [r.stdout for r in again.results] == [b"genuine 2\n", b"genuine 1\n", b"genuine 3\n"], again.results
    assert _entries(cache) == stored


def test_the_cache_is_not_visible_inside_the_sandbox(engine, cache):
    engine.execute(Program("c", "int main(void) { return 0; }\n"), [b""], LIMITS)
    assert _entries(cache)
    probe = f"import os\nprint(os.path.exists({str(cache.directory)!r}), os.path.exists({str(cache.directory.parent)!r}))"
    result = engine.execute(Program("python", probe), [b""], LIMITS).results[0]
    assert result.stdout == b"False False\n", result.stderr


def test_a_compile_error_is_not_kept_and_keeps_the_compilers_message(engine, cache):
    for _ in range(2):
        ex = engine.execute(Program("cpp", "int main() { undefined_name; }\n"), [b""], LIMITS)
        assert not ex.compile.ok and "main.cpp:1:14: error: 'undefined_name' was not declared" in \
            ex.compile.message.replace("\u2018", "'").replace("\u2019", "'"), ex.compile.message
    assert not _entries(cache) and cache.hits == 0


def test_java_classes_come_back_from_the_cache(engine, cache):
    source = "public class Sum { public static void main(String[] a) { System.out.println(40 + 2); } }\n"
    for _ in range(2):
        ex = engine.execute(Program("java", source), [b""], LIMITS)
        assert ex.compile.ok and ex.results[0].stdout == b"42\n", (ex.compile.message, ex.results[0].stderr)
    assert cache.hits == 1


def _compiled(cpu_s: float = 0.5, size: int = 10) -> Compiled:
    run = RunResult(status=RunStatus.OK, exit_code=0, cpu_s=cpu_s, wall_s=cpu_s, memory_kb=1000, stderr=b"warning: x")
    return Compiled(CompileResult(ok=True, run=run), {"main": b"\x7fELF" + b"x" * size}, ("main",))


def test_entries_are_bounded_least_recently_used_first(tmp_path):
    cache = CompileCache(tmp_path, 3500)  # two entries of ~1.4 KB fit, not three
    for used_at, key in enumerate(("a1", "b2", "c3"), start=1):
        cache.put(key * 32, _compiled(size=1000))
        os.utime(tmp_path / key[:2] / (key * 32), (used_at, used_at))  # last used in this order
    assert cache.get("a1" * 32, Limits()) is None  # the oldest went
    hit = cache.get("b2" * 32, Limits())
    assert hit is not None and hit.files["main"].startswith(b"\x7fELF") and hit.executables == ("main",)
    assert hit.result.run.stderr == b"warning: x" and hit.result.run.message == HIT_MESSAGE


def test_a_damaged_entry_is_a_miss_and_is_removed(tmp_path):
    cache = CompileCache(tmp_path, 1 << 20)
    cache.put("d" * 64, _compiled())
    path = tmp_path / "dd" / ("d" * 64)
    path.write_bytes(path.read_bytes()[:-3])
    assert cache.get("d" * 64, Limits()) is None and not path.exists()


def test_a_compile_slower_than_the_requests_limits_is_a_miss(tmp_path):
    cache = CompileCache(tmp_path, 1 << 20)
    cache.put("e" * 64, _compiled(cpu_s=5.0))
    assert cache.get("e" * 64, Limits(cpu_s=2)) is None
    assert cache.get("e" * 64, Limits(cpu_s=10, wall_s=20)) is not None


def test_the_switch(monkeypatch, tmp_path):
    monkeypatch.setenv("CODERL_CACHE", str(tmp_path))
    monkeypatch.setenv("CODERL_COMPILE_CACHE", "0")
    assert CompileCache.from_env() is None and Engine(slots=1).compile_cache is None
    monkeypatch.setenv("CODERL_COMPILE_CACHE", "1")
    monkeypatch.setenv("CODERL_COMPILE_CACHE_MB", "5")
    cache = CompileCache.from_env()
    assert cache is not None and cache.max_bytes == 5 << 20 and cache.directory == tmp_path / "compile-cache"
    assert Engine(slots=1, compile_cache=False).compile_cache is None
    monkeypatch.setenv("CODERL_COMPILE_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="CODERL_COMPILE_CACHE_MB"):
        CompileCache.from_env()
