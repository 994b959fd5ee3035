"""Compile-heavy submissions through the real sandbox, against the plain compiler in the same run
(issue 37): C++ with and without the precompiled headers and the compile cache, Java/Kotlin/Scala
with and without the compilers' class-data archives.

C++: five real solutions of Codeforces problems in ``../shared/data/rllm-test/codeforces.json``
(test 1 of each is the data set's own test and its output is checked; 19 more inputs generated),
20 stdin tests per submission. ``distinct``: every submission is a new source (a GRPO group's
samples: the cache misses, the precompiled header is what helps); ``identical``: one source sent
again and again (a re-evaluation: the cache hits). Rounds alternate baseline and new on the same
engine (the machine is shared and its load moves); each round's throughput is submissions per
second with as many submitters as slots; the figure is the median of the rounds' ratios. CPU
seconds are the compiler's and the tests' own (the record's ``cpu_s``), per submission (medians);
their ratio (what the compiler and the tests themselves cost, the sandbox's own work left out)
moves far less with the load than wall-clock throughput.

    python benchmarks/bench_compile_speed.py [--rounds 3] [--submissions 6] [--slots 2] [--jvm java,kotlin,scala]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

from coderl.sandbox import Engine, Limits, Program
from coderl.sandbox.compile_cache import CompileCache
from coderl.sandbox.languages.cpp import Cpp
from coderl.sandbox.languages.java import Java
from coderl.sandbox.languages.jvm import ArchivedCompiler

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "rllm-test" / "codeforces.json"
LIMITS = Limits(cpu_s=2, wall_s=10, memory_mb=256)
COMPILE_LIMITS = Limits(cpu_s=60, wall_s=120, memory_mb=2048, max_processes=64, stdout_kb=1024)
TESTS = 20

#: problem index in codeforces.json -> (a solution, a generator of one more input)
SOLUTIONS = {
    0: ("#include <bits/stdc++.h>\nusing namespace std;\nint main() { int t; cin >> t; while (t--) { int x, y;"
        " cin >> x >> y; cout << min(x, y) << ' ' << max(x, y) << '\\n'; } }\n",
        lambda r: f"{(n := r.randint(1, 100))}\n" + "".join(f"{r.randint(0, 9)} {r.randint(0, 9)}\n" for _ in range(n))),
    3: ("#include <bits/stdc++.h>\nusing namespace std;\nint main() { ios::sync_with_stdio(false); cin.tie(nullptr);"
        " int t; cin >> t; while (t--) { string s; cin >> s; int changes = 0; bool up = false;"
        " for (size_t i = 0; i + 1 < s.size(); i++) if (s[i] != s[i + 1]) { changes++; if (s[i] == '0') up = true; }"
        " cout << changes + 1 - (up ? 1 : 0) << '\\n'; } }\n",
        lambda r: f"{(n := r.randint(1, 500))}\n" + "".join(
            "".join(r.choice("01") for _ in range(r.randint(1, 500))) + "\n" for _ in range(n))),
    5: ("#include <iostream>\n#include <cmath>\nusing namespace std;\nint main() { int t; cin >> t; while (t--) {"
        " long long r; cin >> r; long long count = 0; for (long long x = 1; x <= r; x++) {"
        " long long lo = (long long)ceil(sqrt((double)max(0LL, r * r - x * x)));"
        " while (lo > 0 && x * x + (lo - 1) * (lo - 1) >= r * r) lo--; while (x * x + lo * lo < r * r) lo++;"
        " long long hi = (long long)sqrt((double)((r + 1) * (r + 1) - x * x));"
        " while (x * x + hi * hi >= (r + 1) * (r + 1)) hi--; while (x * x + (hi + 1) * (hi + 1) < (r + 1) * (r + 1)) hi++;"
        " if (hi >= lo) count += hi - lo + 1; } cout << 4 * count << '\\n'; } }\n",
        lambda r: f"{(n := r.randint(1, 50))}\n" + "".join(f"{r.randint(1, 100000)}\n" for _ in range(n))),
    6: ("#include <bits/stdc++.h>\nusing namespace std;\nint main() { int t; scanf(\"%d\", &t); while (t--) { int n;"
        " scanf(\"%d\", &n); vector<int> a(n); for (auto &x : a) scanf(\"%d\", &x); map<int, vector<int>> groups;"
        " for (int x : a) groups[x >> 2].push_back(x); for (auto &g : groups) sort(g.second.rbegin(), g.second.rend());"
        " for (int i = 0; i < n; i++) { auto &g = groups[a[i] >> 2]; printf(\"%d \", g.back()); g.pop_back(); }"
        " printf(\"\\n\"); } }\n",
        lambda r: f"{(n := r.randint(1, 20))}\n" + "".join(
            f"{(m := r.randint(1, 50))}\n" + " ".join(str(r.randint(0, 64)) for _ in range(m)) + "\n" for _ in range(n))),
    9: ("#include <bits/stdc++.h>\nusing namespace std;\nint main() { int t; cin >> t; while (t--) { int n; string s;"
        " cin >> n >> s; cout << (count(s.begin(), s.end(), 'U') % 2 ? \"YES\" : \"NO\") << '\\n'; } }\n",
        lambda r: f"{(n := r.randint(1, 100))}\n" + "".join(
            f"{(m := r.randint(1, 100))}\n" + "".join(r.choice("UD") for _ in range(m)) + "\n" for _ in range(n))),
}

JAVA = """import java.io.*;
import java.util.*;
public class Main {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        int t = Integer.parseInt(in.readLine().trim());
        StringBuilder out = new StringBuilder();
        while (t-- > 0) {
            StringTokenizer st = new StringTokenizer(in.readLine());
            int x = Integer.parseInt(st.nextToken()), y = Integer.parseInt(st.nextToken());
            out.append(Math.min(x, y)).append(' ').append(Math.max(x, y)).append('\\n');
        }
        System.out.print(out);
    }
}
"""
KOTLIN = """fun main() {
    val t = readLine()!!.trim().toInt()
    val out = StringBuilder()
    repeat(t) {
        val (x, y) = readLine()!!.trim().split(" ").map { it.toInt() }
        out.append(minOf(x, y)).append(' ').append(maxOf(x, y)).append('\\n')
    }
    print(out)
}
"""
SCALA = """object Main {
  def main(args: Array[String]): Unit = {
    val t = scala.io.StdIn.readLine().trim.toInt
    val out = new StringBuilder
    for (_ <- 0 until t) {
      val Array(x, y) = scala.io.StdIn.readLine().trim.split(" ").map(_.toInt)
      out.append(math.min(x, y)).append(' ').append(math.max(x, y)).append('\\n')
    }
    print(out)
  }
}
"""
JVM_SOURCES = {"java": JAVA, "kotlin": KOTLIN, "scala": SCALA}
_NEW_FLAGS = ("-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData", "-fuse-ld=gold")  # flags the compilers lacked before issue 37


def _plain(recipe: dict) -> dict:
    """The recipe as it was before issue 37: no precompiled headers, no class archives."""
    argv, plain = recipe["compile"], []
    skip = False
    for arg in argv or ():
        if skip:
            skip = False
        elif arg == "-isystem":
            skip = True
        elif "SharedArchiveFile" not in arg and arg not in _NEW_FLAGS:
            plain.append(arg)
    return {**recipe, "compile": plain if argv else None}


@contextlib.contextmanager
def baseline(engine: Engine) -> Iterator[None]:
    """The plain compilers and no compile cache on the same engine, for the duration."""
    cache, engine.compile_cache = engine.compile_cache, None
    saved = {cls: cls.__dict__["recipe"] for cls in (Cpp, ArchivedCompiler)}
    for cls, recipe in saved.items():
        cls.recipe = classmethod(lambda c, name, mb, _r=recipe: _plain(_r.__func__(c, name, mb)))  # type: ignore[method-assign]
    try:
        yield
    finally:
        engine.compile_cache = cache
        for cls, recipe in saved.items():
            cls.recipe = recipe  # type: ignore[method-assign]


def cpp_workload(count: int, distinct: bool, salt: str) -> list[tuple[str, list[bytes], bytes]]:
    """(source, 20 inputs, the data set's expected output of input 1) per submission."""
    problems = json.loads(DATA.read_text())
    rng = random.Random(37)
    out = []
    for i in range(count):
        index = list(SOLUTIONS)[i % len(SOLUTIONS) if distinct else 0]
        source, generate = SOLUTIONS[index]
        test = problems[index]["tests"][0]
        inputs = [test["input"].encode() + b"\n", *(generate(rng).encode() for _ in range(TESTS - 1))]
        tag = f"// {salt} submission {i}\n" if distinct else f"// {salt}\n"
        out.append((source + tag, inputs, test["output"].encode()))
    return out


async def run_batch(engine: Engine, language: str, work: list[tuple[str, list[bytes], bytes | None]],
                    submitters: int) -> tuple[float, float, float]:
    """(submissions per second, compile CPU s per submission, test CPU s per submission)."""
    queue = list(work)
    compile_cpu = tests_cpu = 0.0

    async def submitter() -> None:
        nonlocal compile_cpu, tests_cpu
        while queue:
            source, inputs, expected = queue.pop()
            ex = await engine.execute(Program(language, source), inputs, LIMITS, compile_limits=COMPILE_LIMITS)
            if not ex.compiled:
                raise SystemExit(f"{language} did not compile: {ex.compile.message}")
            if expected is not None and ex.results[0].stdout.split() != expected.split():
                raise SystemExit(f"wrong answer on the data set's test: {ex.results[0]}")
            compile_cpu += ex.compile.run.cpu_s if ex.compile else 0.0
            tests_cpu += sum(r.cpu_s for r in ex.results)

    started = time.perf_counter()
    await asyncio.gather(*(submitter() for _ in range(submitters)))
    elapsed = time.perf_counter() - started
    return len(work) / elapsed, compile_cpu / len(work), tests_cpu / len(work)


def _line(name: str, base: list[tuple[float, float, float]], new: list[tuple[float, float, float]]) -> str:
    ratios = [n[0] / b[0] for b, n in zip(base, new, strict=True)]
    med = [statistics.median(x[i] for x in rows) for rows in (base, new) for i in range(3)]
    cpu_ratio = (med[1] + med[2]) / (med[4] + med[5])
    return (f"{name:<22} throughput x{statistics.median(ratios):.1f} (rounds: {' '.join(f'{r:.1f}' for r in ratios)}),"
            f" CPU per submission x{cpu_ratio:.1f}"
            f" | plain {med[0]:.2f} subm/s, compile {med[1]:.3f} + tests {med[2]:.3f} CPU s"
            f" | new {med[3]:.2f} subm/s, compile {med[4]:.3f} + tests {med[5]:.3f} CPU s")


async def main_async(args: argparse.Namespace) -> None:
    cache_dir = Path(args.cache_dir) if args.cache_dir else None
    async with Engine(slots=args.slots, compile_cache=CompileCache(cache_dir, 1 << 30) if cache_dir else True) as engine:
        if engine.compile_cache is None:
            raise SystemExit("the compile cache is switched off (CODERL_COMPILE_CACHE=0)")
        print(f"slots {args.slots}, pch {Cpp.pch()}, javac archive {Java.compiler_archive()}")
        results: dict[str, tuple[list, list]] = {}
        for rnd in range(args.rounds):
            for distinct in (True, False):
                name = f"cpp {'distinct' if distinct else 'identical'}"
                base, new = results.setdefault(name, ([], []))
                salt = f"{time.time_ns()}"  # nothing from an earlier round or run is in the cache
                count = args.submissions if distinct else args.submissions * 4
                order = [(baseline, base), (None, new)] if rnd % 2 == 0 else [(None, new), (baseline, base)]
                for mode, sink in order:
                    work = cpp_workload(count, distinct, salt + ("b" if mode else "n"))
                    if not distinct:  # the first of the identical ones compiles: the rest are what is measured
                        with baseline(engine) if mode else contextlib.nullcontext():
                            await run_batch(engine, "cpp", work[:1], 1)
                    with baseline(engine) if mode else contextlib.nullcontext():
                        sink.append(await run_batch(engine, "cpp", work, args.slots))
                print(f"round {rnd + 1}: " + _line(name, base[-1:], new[-1:]), flush=True)
            for language in [x for x in args.jvm.split(",") if x and x in engine.languages()]:
                name = f"{language} distinct"
                base, new = results.setdefault(name, ([], []))
                salt = f"{time.time_ns()}"
                test = json.loads(DATA.read_text())[0]["tests"][0]
                inputs = [test["input"].encode() + b"\n"] * 5
                comment = "//" if language != "python" else "#"
                order = [(baseline, base), (None, new)] if rnd % 2 == 0 else [(None, new), (baseline, base)]
                for mode, sink in order:
                    work = [(JVM_SOURCES[language] + f"{comment} {salt}{mode is None} {i}\n", inputs,
                             test["output"].encode()) for i in range(args.jvm_submissions)]
                    with baseline(engine) if mode else contextlib.nullcontext():
                        sink.append(await run_batch(engine, language, work, args.slots))
                print(f"round {rnd + 1}: " + _line(name, base[-1:], new[-1:]) +
                      f" | per test {new[-1][2] / len(inputs):.3f} CPU s", flush=True)
        print("\nmedians over the rounds")
        for name, (base, new) in results.items():
            print(_line(name, base, new))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--submissions", type=int, default=6, help="per round and mode (identical: 4x as many)")
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--jvm", default="java", help="JVM languages to measure too: java,kotlin,scala")
    parser.add_argument("--jvm-submissions", type=int, default=4)
    parser.add_argument("--cache-dir", help="the compile cache's directory (default: the configured one)")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
