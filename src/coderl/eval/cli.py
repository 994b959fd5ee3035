"""`coderl eval lcb ...`: LiveCodeBench evaluation of a model (or of responses made elsewhere)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    ev = subparsers.add_parser("eval", help="evaluate a model on LiveCodeBench through the sandbox")
    sub = ev.add_subparsers(dest="eval_command", metavar="BENCHMARK")
    sub.required = True
    p = sub.add_parser("lcb", help="LiveCodeBench (defaults reproduce the recipe: n=4, T=0.6, top_p=0.95, 32K)")
    p.add_argument("--problems", required=True, help="`coderl data lcb` output dir or problems.jsonl (or raw LCB jsonl)")
    p.add_argument("--out", required=True, help="directory for samples.jsonl, summary.json, summary.md (resumable)")
    p.add_argument("--backend", choices=("openai", "vllm", "responses"), default="openai")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", help="model name at the endpoint, or a checkpoint dir for --backend vllm")
    p.add_argument("--responses", help="JSONL {question_id, response|responses} to score (--backend responses)")
    p.add_argument("--sandbox-url", help="coderl service URL(s), comma-separated; default: an in-process engine")
    p.add_argument("--n", type=int, default=4)
    p.add_argument("--temperature", type=float, default=0.6)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--top-k", type=int)
    p.add_argument("--max-tokens", type=int, default=32768)
    p.add_argument("--thinking", choices=("on", "off"), help="chat template enable_thinking")
    p.add_argument("--tools", action="store_true", help="multi-turn with the code_interpreter tool, as in training")
    p.add_argument("--max-turns", type=int, default=8)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--limit", type=int, help="first N problems only")
    p.set_defaults(func=_lcb)


def _lcb(args: argparse.Namespace) -> int:
    import asyncio

    from coderl.eval.backends import Sampling
    from coderl.eval.lcb import EvalConfig, evaluate, markdown

    if args.n < 1:
        raise ValueError("--n must be at least 1")
    sampling = Sampling(n=args.n, temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                        max_tokens=args.max_tokens,
                        enable_thinking=None if args.thinking is None else args.thinking == "on")
    cfg = EvalConfig(problems=args.problems, out_dir=args.out, sampling=sampling, backend=args.backend,
                     base_url=args.base_url, model=args.model, responses=args.responses, sandbox_url=args.sandbox_url,
                     tools=args.tools, max_turns=args.max_turns, concurrency=args.concurrency, limit=args.limit)
    print(markdown(asyncio.run(evaluate(cfg))))
    return 0
