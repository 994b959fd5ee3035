"""Every language's self-test (hello world) through the real sandbox: the compile step's wall and
CPU seconds (once per submission) and one run's wall and CPU seconds (the median of the runs of a
submission, each a fresh process). Used for the language table in docs/sandbox.md.

    python benchmarks/bench_languages.py [--languages scala,kotlin] [--repeat 3] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics

from coderl.sandbox import Limits, Program
from coderl.sandbox.blocking import BlockingEngine
from coderl.sandbox.languages import ALL, resolve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", default=",".join(lang.name for lang in ALL))
    parser.add_argument("--repeat", type=int, default=3, help="submissions per language")
    parser.add_argument("--runs", type=int, default=5, help="runs (test cases) per submission")
    args = parser.parse_args()
    compile_limits = Limits(cpu_s=60, wall_s=120, memory_mb=2048, max_processes=64, stdout_kb=1024)
    limits = Limits(cpu_s=10, wall_s=20, memory_mb=256)
    print(f"{'language':<12} {'compile wall s':>14} {'compile cpu s':>13} {'run wall s':>10} {'run cpu s':>9}")
    with BlockingEngine(slots=1) as engine:
        for name in args.languages.split(","):
            if name not in engine.engine.languages():
                print(f"{name:<12} not installed")
                continue
            compiles: list[tuple[float, float]] = []
            runs: list[tuple[float, float]] = []
            for _ in range(args.repeat):
                ex = engine.execute(Program(name, resolve(name).hello), [b""] * args.runs, limits,
                                    compile_limits=compile_limits)
                if not ex.compiled or any(r.stdout != b"hello, coderl\n" for r in ex.results):
                    raise SystemExit(f"{name}: hello world failed: {ex.compile} {ex.results[0]}")
                if ex.compile is not None:
                    compiles.append((ex.compile.run.wall_s, ex.compile.run.cpu_s))
                runs += [(r.wall_s, r.cpu_s) for r in ex.results]
            comp = (f"{statistics.median(w for w, _ in compiles):>14.2f} {statistics.median(c for _, c in compiles):>13.2f}"
                    if compiles else f"{'-':>14} {'-':>13}")
            print(f"{name:<12} {comp} {statistics.median(w for w, _ in runs):>10.3f} "
                  f"{statistics.median(c for _, c in runs):>9.3f}", flush=True)


if __name__ == "__main__":
    main()
