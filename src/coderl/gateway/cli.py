"""`coderl gateway`: the interception gateway as a standalone server (eval, debugging a harness).

    coderl gateway --tokenizer MODEL_DIR --backend vllm --backend-url http://127.0.0.1:8000 \\
        --listen 127.0.0.1:8100 [--listen unix:/run/gw.sock] [--admin] [--auto-session]

Backends: ``vllm`` / ``sglang`` (a server given token ids), ``transformers`` (the model in this
process: tests, tiny models), ``replay`` (a JSONL script of outputs, ``{"text": ...}`` or
``{"ids": [...]}`` per line). ``--admin`` adds the session routes (``POST/GET/DELETE /sessions``)
to the TCP listeners (never to unix sockets, which are what sandboxes get); ``--auto-session``
opens a session on the first request that names one (any API key works).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

from coderl import api_token
from coderl.api_token import token_from
from coderl.argtypes import positive_int
from coderl.errors import BadRequest


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("gateway", help="run the agent interception gateway (OpenAI + Anthropic APIs -> tokens)")
    p.add_argument("--tokenizer", required=True, help="model or tokenizer directory (its chat template is used)")
    p.add_argument("--backend", choices=("vllm", "sglang", "transformers", "replay"), required=True)
    p.add_argument("--backend-url", help="vllm/sglang: the server's base URL")
    p.add_argument("--model", default="default", help="vllm: the served model name")
    p.add_argument("--replay", help="replay: JSONL file of outputs")
    p.add_argument("--listen", action="append", default=None,
                   help="host:port or unix:/path (repeatable; default 127.0.0.1:8100)")
    p.add_argument("--admin", action="store_true", help="session admin routes on the TCP listeners")
    p.add_argument("--api-token-file", metavar="PATH",
                   help="the admin routes require this file's token (default: $CODERL_API_TOKEN, if set)")
    p.add_argument("--auto-session", action="store_true", help="open sessions on first use")
    p.add_argument("--max-context", type=positive_int, default=32768, help="tokens per session (default 32768)")
    p.add_argument("--timeout-s", type=float, default=3600.0, help="session time budget (default 3600)")
    p.add_argument("--temperature", type=float, help="forced sampling temperature (default: the backend's)")
    p.add_argument("--top-p", type=float, help="forced top_p")
    p.set_defaults(func=_gateway)


def build_backend(args: argparse.Namespace, tokenizer: object, stop_ids: set[int]) -> object:
    from coderl.gateway import backends

    if args.backend in ("vllm", "sglang"):
        if not args.backend_url:
            raise BadRequest(f"--backend {args.backend} needs --backend-url")
        return backends.OpenAICompatBackend(args.backend_url, args.model, stop_ids, flavor=args.backend)
    if args.backend == "transformers":
        return backends.TransformersBackend(args.tokenizer, stop_ids)
    if not args.replay:
        raise BadRequest("--backend replay needs --replay FILE")
    script: list = []
    for n, line in enumerate(Path(args.replay).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            script.append(row["ids"] if "ids" in row else row["text"])
        except (ValueError, KeyError, TypeError):
            raise BadRequest(f"{args.replay}:{n}: each line must be {{\"text\": ...}} or {{\"ids\": [...]}}") from None
    return backends.ReplayBackend(script, tokenizer, stop_ids)


def _gateway(args: argparse.Namespace) -> int:
    from transformers import AutoTokenizer

    from coderl.gateway.chat import ChatFormat
    from coderl.gateway.core import Gateway, SessionConfig
    from coderl.gateway.server import serve

    if not Path(args.tokenizer).is_dir():
        raise FileNotFoundError(f"--tokenizer: no such directory: {args.tokenizer}")
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    fmt = ChatFormat(tokenizer)
    sampling = {k: v for k, v in (("temperature", args.temperature), ("top_p", args.top_p)) if v is not None}
    gateway = Gateway(fmt, build_backend(args, tokenizer, fmt.stop_ids), auto_open=args.auto_session,
                      default=SessionConfig(max_context=args.max_context, timeout_s=args.timeout_s, sampling=sampling))
    if args.api_token_file:  # the admin routes read it (coderl.gateway.server.add_admin_routes)
        os.environ[api_token.ENV] = token_from(args.api_token_file)
    listen = args.listen or ["127.0.0.1:8100"]
    admin = tuple(a for a in listen if not a.startswith("unix:")) if args.admin else ()

    async def main() -> None:
        served = await serve(gateway, listen, admin_addresses=admin)
        print(f"coderl gateway: listening on {', '.join(served.addresses)} (backend {args.backend}"
              f"{', admin routes' if admin else ''}{', auto sessions' if args.auto_session else ''})", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await served.stop()

    asyncio.run(main())
    return 0
