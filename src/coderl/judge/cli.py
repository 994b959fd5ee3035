"""`coderl judge`: judge one program (or model response) against a test file by hand, in-process.

The quickest way to see why a sample scored as it did: same judge, same sandbox as the service.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coderl.errors import BadRequest

_EXTENSIONS = {".py": "python", ".c": "c", ".cpp": "cpp", ".cc": "cpp", ".java": "java", ".js": "javascript",
               ".go": "go", ".rs": "rust"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("judge", help="judge a program or a model response against tests")
    p.add_argument("file", type=Path, help="source file (or a model response with --response)")
    p.add_argument("--tests", "-t", type=Path, required=True,
                   help="tests in any supported format (JSON or Python literal; see docs/judge.md)")
    p.add_argument("--format", help="test format name (default: detect from the shape)")
    p.add_argument("--language", "-l", help="default: from the file extension (or the fence tag)")
    p.add_argument("--fn-name", help="function name, for formats that do not carry it")
    p.add_argument("--response", action="store_true", help="FILE is a model response: extract the code")
    p.add_argument("--run-all", action="store_true", help="run every test instead of stopping at the first failure")
    p.add_argument("--cpu-s", type=float, default=6.0)
    p.add_argument("--wall-s", type=float, default=12.0)
    p.add_argument("--memory-mb", type=int, default=1024)
    p.add_argument("--json", action="store_true", help="print the full result record as JSON")
    p.set_defaults(func=_judge)


def _judge(args: argparse.Namespace) -> int:
    from coderl.judge import Judge, Submission, Verdict, to_spec
    from coderl.sandbox import Limits
    from coderl.sandbox.blocking import BlockingEngine

    text = args.file.read_text()
    spec = to_spec(args.tests.read_text(), args.format, fn_name=args.fn_name)
    language = args.language or (None if args.response else _EXTENSIONS.get(args.file.suffix))
    if language is None and not args.response:
        raise BadRequest(f"cannot tell the language of {args.file.name}: pass --language")
    try:
        limits = Limits(cpu_s=args.cpu_s, wall_s=args.wall_s, memory_mb=args.memory_mb)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    sub = Submission(spec=spec, language=language, stop_on_first_failure=not args.run_all, limits=limits,
                     **({"response": text} if args.response else {"code": text}))
    with BlockingEngine(slots=1) as engine:
        res = engine.call(Judge(engine.engine).judge(sub))
    if args.json:
        print(json.dumps(res.to_dict(), indent=2))
    else:
        print(f"{res.verdict.value} ({res.passed}/{res.total} passed, {res.language}, {res.wall_s:.2f} s)")
        for i, case in enumerate(res.cases):
            run = f" {case.run.cpu_s:.2f} s {case.run.memory_kb // 1024} MiB" if case.run is not None else ""
            print(f"  test {i + 1}: {case.verdict.value}{run}{'  ' + case.message if case.message else ''}")
        if any(case.verdict is Verdict.SKIPPED for case in res.cases):
            print("  (skipped: not run after the first failure; --run-all runs every test)")
        if res.compile_message:
            print(res.compile_message.rstrip())
    return 0 if res.accepted else 1
