"""Gateway overhead per agent turn: a harness's chat call through `coderl gateway` (HTTP, session
lookup, message matching, chat-template render and prefix check, suffix tokenization, record,
parse, response) against calling the token backend directly with the same prompt ids. The gateway
is the real CLI in its own process with the replay backend (it answers instantly), the client a
plain keep-alive stdlib HTTP client (a harness's own client costs are not the gateway's). The
conversation grows each turn (a tool call, then ``--tool-chars`` of tool output) as an agent's
does. Target: < 5 ms p50.

    python benchmarks/bench_gateway.py [--sessions 20] [--turns 10] [--tool-chars 1500] [--stream]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from transformers import AutoTokenizer

from coderl.data.qwen_tokenizer import build_tiny_model
from coderl.gateway.backends import ReplayBackend
from coderl.gateway.chat import ChatFormat

TOOLS = [{"type": "function", "function": {"name": "bash", "description": "Run a command",
                                           "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
CALL = json.dumps({"name": "bash", "arguments": {"command": "python -m pytest -q tests/test_mod.py"}})
OUTPUT = f"Let me run the tests.\n<tool_call>\n{CALL}\n</tool_call>"


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def direct_calls(model: Path, prompts: list[list[int]]) -> list[float]:
    """The backend alone, on the prompts the gateway sent it."""
    tokenizer = AutoTokenizer.from_pretrained(model)
    backend = ReplayBackend([OUTPUT] * len(prompts), tokenizer, ChatFormat(tokenizer).stop_ids)

    async def run() -> list[float]:
        out = []
        for ids in prompts:
            t = time.perf_counter()
            await backend.generate(ids, 1 << 20, {}, "direct")
            out.append(time.perf_counter() - t)
        return out

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--tool-chars", type=int, default=1500)
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args()
    model = build_tiny_model()
    script = Path(tempfile.mkdtemp()) / "replay.jsonl"
    script.write_text((json.dumps({"text": OUTPUT}) + "\n") * args.turns)
    port = free_port()
    coderl = str(Path(sys.executable).parent / "coderl")
    server = subprocess.Popen([coderl, "gateway", "--tokenizer", str(model), "--backend", "replay", "--replay",
                               str(script), "--listen", f"127.0.0.1:{port}", "--admin", "--auto-session"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if "listening" not in line:
            raise SystemExit(f"the gateway did not start: {line}")
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        output = ("x" * 70 + "\n") * (args.tool_chars // 71)
        totals: list[float] = []
        for s in range(args.sessions + 1):  # session 0 warms up
            messages = [{"role": "system", "content": "You are a coding agent."},
                        {"role": "user", "content": "Fix the failing test in this repository."}]
            for _ in range(args.turns):
                body = json.dumps({"model": "m", "messages": messages, "tools": TOOLS, "stream": args.stream})
                t = time.perf_counter()
                conn.request("POST", "/v1/chat/completions", body,
                             {"Authorization": f"Bearer b{s}", "Content-Type": "application/json"})
                raw = conn.getresponse().read()
                elapsed = time.perf_counter() - t
                if s:
                    totals.append(elapsed)
                if args.stream:
                    msg = {"role": "assistant", "content": "Let me run the tests.", "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "bash", "arguments": json.dumps(
                            json.loads(CALL)["arguments"])}}]}
                else:
                    msg = json.loads(raw)["choices"][0]["message"]
                messages += [msg, {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"], "content": output}]
        conn.request("GET", f"/sessions/b{args.sessions}")
        record = json.loads(conn.getresponse().read())
        assert record["drifts"] == 0, record
        branch = record["trajectory"]["branches"][-1]
        prompts, pos = [], branch["prompt_ids"] + branch["response_ids"]
        for turn in branch["turns"]:
            prompts.append(pos[: turn["start"]])
    finally:
        server.terminate()
        server.wait()
    direct = direct_calls(model, prompts * args.sessions)
    print(f"{args.sessions} sessions x {args.turns} turns, tool output {args.tool_chars} chars/turn, "
          f"final context {len(pos)} tokens, stream={args.stream}, load average {os.getloadavg()[0]:.1f}")
    print(f"direct backend call   p50 {pct(direct, .5):7.3f} ms   p95 {pct(direct, .95):7.3f} ms")
    print(f"through the gateway   p50 {pct(totals, .5):7.3f} ms   p95 {pct(totals, .95):7.3f} ms")
    print(f"gateway overhead      p50 {pct(totals, .5) - pct(direct, .5):7.3f} ms (difference of the p50s)")


if __name__ == "__main__":
    main()
