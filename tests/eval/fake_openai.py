"""A scripted OpenAI-compatible chat server on loopback, for evaluation tests."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWERS = {
    "sum": "<think>easy</think>\n```python\na, b = map(int, input().split())\nprint(a + b)\n```",
    "wrong": "```python\nprint(0)\n```",
    "nocode": "I think the answer is 42.",
    "slow": "```python\nimport time\ntime.sleep(0.2)\nprint(int(input()) * 2)\n```",
    "broken": "```python\ndef f(:\n    print(1)\n```",
}


def make_server(port: int, *, flaky: bool = True) -> ThreadingHTTPServer:
    state = {"calls": 0, "malformed_sent": False, "bodies": []}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["calls"] += 1
            state["bodies"].append(body)
            text = json.dumps(body["messages"])
            if flaky and not state["malformed_sent"]:
                state["malformed_sent"] = True  # one malformed reply: the client must retry
                self._send(200, b"{not json")
                return
            if "tools" in body and body["messages"][-1]["role"] != "tool":
                call = {"id": "c1", "type": "function",
                        "function": {"name": "code_interpreter", "arguments": json.dumps({"code": "print(40 + 2)"})}}
                message = {"role": "assistant", "content": "Let me check.", "tool_calls": [call]}
                finish = "tool_calls"
            else:
                key = next((k for k in ANSWERS if f"[{k}]" in text), "nocode")
                if key == "slow":
                    time.sleep(0.3)
                message = {"role": "assistant", "content": ANSWERS[key]}
                finish = "length" if key == "nocode" else "stop"  # a reasoning cut at max_tokens has no code
            reply = {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}
            self._send(200, json.dumps(reply).encode())

        def _send(self, code: int, data: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.state = state  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
