"""`coderl sandbox ...`: diagnose the host, run one program by hand."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    sandbox = subparsers.add_parser("sandbox", help="inspect and use the isolated execution engine")
    sub = sandbox.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND")
    sub.required = True
    doctor = sub.add_parser("doctor", help="show what isolation this host gives and what is missing")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--isolation", choices=("bwrap", "none"), default="bwrap")
    doctor.set_defaults(func=_doctor)
    run = sub.add_parser("run", help="run one program in the sandbox and print its result record")
    run.add_argument("file", type=Path, help="source file")
    run.add_argument("--language", "-l", required=True)
    run.add_argument("--stdin", type=Path, help="file to feed on stdin")
    run.add_argument("--cpu-s", type=float, default=6.0)
    run.add_argument("--wall-s", type=float, default=12.0)
    run.add_argument("--memory-mb", type=int, default=1024)
    run.add_argument("--isolation", choices=("bwrap", "none"), default="bwrap")
    run.set_defaults(func=_run)


def _doctor(args: argparse.Namespace) -> int:
    from coderl.sandbox import doctor

    checks = doctor.run_checks(args.isolation)
    print(json.dumps(doctor.as_json(checks), indent=2) if args.json else doctor.report(checks))
    return 0 if doctor.essential_ok(checks) else 1


def _run(args: argparse.Namespace) -> int:
    from coderl.sandbox import Limits, Program
    from coderl.sandbox.blocking import BlockingEngine

    source = args.file.read_text()
    stdin = args.stdin.read_bytes() if args.stdin else b""
    limits = Limits(cpu_s=args.cpu_s, wall_s=args.wall_s, memory_mb=args.memory_mb)
    with BlockingEngine(slots=1, isolation=args.isolation) as engine:
        ex = engine.execute(Program(args.language, source), [stdin], limits)
    if ex.compile is not None and not ex.compile.ok:
        print(ex.compile.message, file=sys.stderr)
    result = ex.results[0]
    sys.stdout.write(result.stdout.decode("utf-8", "replace"))
    sys.stderr.write(result.stderr.decode("utf-8", "replace"))
    record = {k: v for k, v in result.to_dict().items() if k not in ("stdout", "stderr")}
    print(json.dumps({"isolation": ex.isolation, **record}), file=sys.stderr)
    return 0 if result.ok and ex.compiled else 1
