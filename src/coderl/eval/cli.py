"""`coderl eval lcb ...`: LiveCodeBench evaluation of a model (or of responses made elsewhere)."""

from __future__ import annotations

import argparse

from coderl.argtypes import positive_float, positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    ev = subparsers.add_parser("eval", help="evaluate a model on LiveCodeBench through the sandbox")
    sub = ev.add_subparsers(dest="eval_command", metavar="BENCHMARK")
    sub.required = True
    p = sub.add_parser("lcb", help="LiveCodeBench; the defaults reproduce the recipe (n=4, T=0.6, top_p=0.95, 32K)",
                       description="Generate n samples per problem, judge them in the sandbox with LiveCodeBench's "
                                   "rules, write samples.jsonl, summary.json and summary.md to --out. Run again on "
                                   "the same --out to resume. Exit 1 when sandbox errors are left unscored.")
    p.add_argument("--problems", required=True,
                   help="`coderl data lcb` output dir (problems.jsonl + meta.json; default window release_v5, "
                        "2024-08-01..2025-02-01), or a problems.jsonl / raw LiveCodeBench jsonl")
    p.add_argument("--out", required=True, help="output directory (resumable)")
    p.add_argument("--backend", choices=("openai", "vllm", "responses"), default="openai")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (--backend openai)")
    p.add_argument("--model", help="served model name (openai) or Hugging Face model dir (vllm)")
    p.add_argument("--responses", help="JSONL {question_id, response | responses: [...]} (--backend responses)")
    p.add_argument("--sandbox-url", help="coderl service URL(s), comma-separated; default: an in-process engine")
    p.add_argument("--n", type=positive_int, help="samples per problem (default 4; with --backend responses, "
                                                   "as many as the file holds for each problem)")
    p.add_argument("--temperature", type=float, default=0.6)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--top-k", type=int)
    p.add_argument("--max-tokens", type=positive_int, default=32768)
    p.add_argument("--thinking", choices=("on", "off"), help="chat template enable_thinking (default: the template's)")
    p.add_argument("--tools", action="store_true", help="multi-turn with the code_interpreter tool, as in training")
    p.add_argument("--max-turns", type=positive_int, default=16, help="assistant turns with --tools (default 16)")
    p.add_argument("--concurrency", type=positive_int,
                   help="requests in flight (openai, default 32) or samples per batch (vllm, default 512)")
    p.add_argument("--tensor-parallel-size", type=positive_int, default=1, help="vllm backend")
    p.add_argument("--timeout", type=positive_float, default=6.0, help="CPU seconds per test (LiveCodeBench: 6)")
    p.add_argument("--memory-mb", type=positive_int, default=1024)
    p.add_argument("--start-date", help="only problems from this contest date on (inclusive; raw LiveCodeBench "
                                        "rows default to the recipe's 2024-08-01)")
    p.add_argument("--end-date", help="only problems up to this contest date (inclusive; raw rows default to 2025-02-01)")
    p.add_argument("--extraction", choices=("lcb", "coderl"), default="lcb",
                   help="code extraction: lcb, LiveCodeBench's own rule (the last two fence lines; default, "
                        "comparable with official numbers); coderl, the reward's rule with its fallbacks")
    p.add_argument("--limit", type=positive_int, help="the first N problems only")
    p.set_defaults(func=_lcb)
    swe = sub.add_parser("swe", help="resolved rate of repository tasks, for a file of patches or a served model",
                         description="Grade each task's diff in a fresh sandbox (FAIL_TO_PASS / PASS_TO_PASS); write "
                                     "results.jsonl, summary.json and summary.md to --out. Run again on the same "
                                     "--out to resume. Exit 1 when sandbox errors are left unscored.")
    swe.add_argument("--tasks", required=True, help="tasks.jsonl (SWE-bench rows), a `coderl data swe` output dir, "
                                                    "or builtin (coderl's own task set)")
    swe.add_argument("--repos", help="directory of git mirrors or tarballs (not needed with --tasks builtin)")
    swe.add_argument("--split", help="with --tasks builtin: train or heldout, that split's tasks only (default: all)")
    swe.add_argument("--out", required=True, help="output directory (resumable)")
    swe.add_argument("--patches", help="JSONL of {instance_id, model_patch | patch} (SWE-bench predictions)")
    swe.add_argument("--gold", action="store_true", help="grade each task's own fix (the grader's self-test)")
    swe.add_argument("--harness", help="agent command run per task in a session sandbox (needs --gateway-socket)")
    swe.add_argument("--gateway-socket", help="unix socket of a `coderl gateway --auto-session` serving the model")
    swe.add_argument("--harness-bind", action="append", default=[], help="host path the harness needs, read-only")
    swe.add_argument("--harness-timeout", type=positive_float, default=1800.0, help="seconds per episode")
    swe.add_argument("--model", default="coderl-policy", help="model name the harness asks the gateway for")
    swe.add_argument("--sandbox-url", help="grade through a coderl service (/v1/swe/grade) instead of in-process")
    swe.add_argument("--sessions-url", help="run --harness in the session sandboxes of this coderl service (its "
                                            "/v1/sessions) and grade there; local sandboxes are the default")
    swe.add_argument("--gateway-url", help="with --sessions-url: the gateway's TCP listener as that service reaches it")
    swe.add_argument("--concurrency", type=positive_int, default=2, help="tasks graded at once (default 2)")
    swe.add_argument("--cache", help="snapshots and environments (default: $CODERL_CACHE or ~/.cache/coderl)")
    swe.add_argument("--find-links", help="wheel directory for the environments (pip --no-index)")
    swe.add_argument("--limit", type=positive_int, help="the first N tasks only")
    swe.add_argument("--labels", choices=("row", "official"), default="row",
                     help="row: the FAIL_TO_PASS / PASS_TO_PASS each row carries (a gate's kept rows: its lists, "
                          "relabelled rows' included; default); official: SWE-bench's own lists where the gate "
                          "changed them (gate.official), for official-label numbers")
    swe.add_argument("--image", metavar="TEMPLATE", help="each task's environment is its image (no --repos), as "
                                                         "`coderl data swe --image`: {instance_id}, {sweb_id}")
    swe.add_argument("--image-python", default="python3", help="with --image: the interpreter with the task's pytest")
    swe.add_argument("--workdir", default="/testbed", help="with --image: where the image holds the repository")
    swe.add_argument("--image-user", default="", help="with --image: who episodes and grading run as (default: the "
                                                      "image's User)")
    swe.set_defaults(func=_swe)
    from coderl.eval.harbor import add_parser as harbor_parser

    harbor_parser(sub)
    sg = sub.add_parser("swe-gate", help="the validation gate: gold and empty patches over task rows; keeps the tasks "
                                         "gold resolves and empty does not (drifted PASS_TO_PASS dropped; a listed "
                                         "FAIL_TO_PASS test passing unfixed moved to PASS_TO_PASS, and a row none of whose "
                                         "listed ones fails unfixed relabelled from its test patch's tests, recorded)")
    sg.add_argument("--tasks", required=True, help="tasks.jsonl (from `coderl data swe-bench`) or its directory")
    sg.add_argument("--repos", required=True, help="the mirrors / bundles directory the rows were made from")
    sg.add_argument("--out", required=True, help="output directory: gate.jsonl (resumable), gate.json, gate.md, "
                                                 "tasks.jsonl (the kept rows)")
    sg.add_argument("--instances", nargs="+", metavar="ID", help="only these instance ids")
    sg.add_argument("--concurrency", type=positive_int, default=1, help="tasks at once (default 1)")
    sg.add_argument("--repeats", type=positive_int, default=1,
                    help="grade gold and empty N times each: tests whose runs disagree are reported flaky, apart "
                         "from broken ones; a flaky PASS_TO_PASS test is dropped from the row (default 1)")
    sg.add_argument("--cache", help="snapshots and environments (default: $CODERL_CACHE or ~/.cache/coderl)")
    sg.set_defaults(func=_swe_gate)
    r = sub.add_parser("record", help="put one checkpoint's summary.json into the results table (CSV)",
                       description="One row per step (step,pass@1,easy,medium,hard); a step recorded again replaces "
                                   "its row. `coderl plot eval` draws the table.")
    r.add_argument("--summary", required=True, help="summary.json from `coderl eval lcb`")
    r.add_argument("--step", required=True, type=int, help="the checkpoint's training step")
    r.add_argument("--results", required=True, help="the CSV to update (created if missing)")
    r.set_defaults(func=_record)




def _swe(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from coderl.cache import default_cache_dir
    from coderl.eval.swe import SweEvalConfig, evaluate_swe, exit_code, markdown

    cfg = SweEvalConfig(tasks=args.tasks, out_dir=args.out, cache_dir=Path(args.cache) if args.cache else default_cache_dir(),
                        repos=args.repos, patches=args.patches, gold=args.gold, harness=args.harness,
                        gateway_socket=args.gateway_socket, harness_binds=tuple(args.harness_bind),
                        harness_timeout_s=args.harness_timeout, model=args.model, sandbox_url=args.sandbox_url,
                        sessions_url=args.sessions_url, gateway_url=args.gateway_url,
                        concurrency=args.concurrency, find_links=Path(args.find_links) if args.find_links else None,
                        limit=args.limit, split=args.split, image=args.image, image_python=args.image_python,
                        workdir=args.workdir, image_user=args.image_user, labels=args.labels)
    summary = asyncio.run(evaluate_swe(cfg))
    print(markdown(summary))
    return exit_code(summary)


def _swe_gate(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from coderl.cache import default_cache_dir
    from coderl.eval.swe_gate import run_gate

    tasks = Path(args.tasks) / "tasks.jsonl" if Path(args.tasks).is_dir() else Path(args.tasks)
    summary = asyncio.run(run_gate(str(tasks), Path(args.repos), Path(args.out),
                                   cache_dir=Path(args.cache) if args.cache else default_cache_dir(),
                                   concurrency=args.concurrency, instances=args.instances, repeats=args.repeats))
    print((Path(args.out) / "gate.md").read_text())
    return 0 if summary["kept"] else 1


def _lcb(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    from coderl.eval.backends import Sampling
    from coderl.eval.lcb import EvalConfig, evaluate, exit_code, markdown

    n = args.n if args.n is not None or args.backend == "responses" else 4
    sampling = Sampling(n=n, temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                        max_tokens=args.max_tokens,
                        enable_thinking=None if args.thinking is None else args.thinking == "on")
    cfg = EvalConfig(problems=args.problems, out_dir=args.out, sampling=sampling, backend=args.backend,
                     base_url=args.base_url, model=args.model, responses=args.responses, sandbox_url=args.sandbox_url,
                     tools=args.tools, max_turns=args.max_turns, concurrency=args.concurrency,
                     tensor_parallel_size=args.tensor_parallel_size, limit=args.limit, cpu_s=args.timeout,
                     memory_mb=args.memory_mb, extraction=args.extraction,
                     start_date=args.start_date, end_date=args.end_date)
    summary = asyncio.run(evaluate(cfg))
    print(markdown(summary))
    code = exit_code(summary)
    if code:
        print(f"coderl: {summary['sandbox_errors_excluded']} samples not scored (sandbox errors); run the same "
              f"command again to judge them", file=sys.stderr)
    return code


def _record(args: argparse.Namespace) -> int:
    from coderl.eval.results import record

    print(record(args.summary, args.step, args.results))
    return 0
