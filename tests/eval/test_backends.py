"""The generation backends' contracts on their own: the endpoint's retry policy and concurrency
limit against a scripted server, vLLM through a stand-in module (vLLM itself is only in the
accelerator images), and the tool mode's turn limit; the tool mode's limits match training's."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from coderl.errors import BadRequest, ServiceUnavailable
from coderl.eval import agent
from coderl.eval.backends import OpenAIBackend, Sampling, VLLMBackend

ROOT = Path(__file__).resolve().parents[2]
OK = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}]}


def scripted(replies: list) -> tuple[ThreadingHTTPServer, dict]:
    """Answers the i-th request with replies[i] (then the last one): a status code, OK, or "drop"
    (close the connection without answering); records the most requests seen in flight."""
    state = {"calls": 0, "in_flight": 0, "most": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                reply = replies[min(state["calls"], len(replies) - 1)]
                state["calls"] += 1
                state["in_flight"] += 1
                state["most"] = max(state["most"], state["in_flight"])
            time.sleep(0.05)
            with lock:
                state["in_flight"] -= 1
            if reply == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            code, body = (200, OK) if reply == "ok" else (reply, {"error": "scripted"})
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # the kernel's free port, bound at once
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


def chat(server: ThreadingHTTPServer, **kwargs) -> tuple[object, float]:
    async def main():
        backend = OpenAIBackend(f"http://127.0.0.1:{server.server_address[1]}/v1", "m", Sampling(), **kwargs)
        try:
            return await backend.chat([{"role": "user", "content": "hi"}])
        except Exception as exc:  # noqa: BLE001 - returned for the assertions
            return exc
        finally:
            await backend.aclose()

    started = time.monotonic()
    out = asyncio.run(main())
    server.shutdown()
    return out, time.monotonic() - started


def test_endpoint_retries_429_5xx_and_dropped_connections(monkeypatch):
    monkeypatch.setattr("coderl.eval.backends.random.uniform", lambda a, b: 0.01)  # no waiting in tests
    server, state = scripted([429, 503, "drop", 500, "ok"])
    reply, _ = chat(server, retries=4)
    assert reply == {"message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}
    assert state["calls"] == 5


def test_endpoint_gives_up_after_its_retries_and_stops_at_once_on_other_4xx(monkeypatch):
    monkeypatch.setattr("coderl.eval.backends.random.uniform", lambda a, b: 0.01)
    server, state = scripted([502])
    error, _ = chat(server, retries=2)
    assert isinstance(error, ServiceUnavailable) and "HTTP 502" in str(error) and state["calls"] == 3
    server, state = scripted([400])
    error, _ = chat(server, retries=5)
    assert isinstance(error, BadRequest) and "HTTP 400" in str(error) and state["calls"] == 1


def test_endpoint_concurrency_limit():
    server, state = scripted(["ok"])

    async def main():
        backend = OpenAIBackend(f"http://127.0.0.1:{server.server_address[1]}/v1", "m", Sampling(), concurrency=3)
        try:
            items = [({"prompt": [{"role": "user", "content": str(i)}]}, 0) for i in range(12)]
            return await backend.generate(items)
        finally:
            await backend.aclose()

    out = asyncio.run(main())
    server.shutdown()
    assert [g.text for g in out] == ["done"] * 12 and state["calls"] == 12 and state["most"] == 3


def test_vllm_backend_batches_with_the_sampling_settings(monkeypatch):
    seen: dict = {}

    class SamplingParams:
        def __init__(self, **kwargs):
            seen["params"] = kwargs

    class LLM:
        def __init__(self, **kwargs):
            seen["llm"] = kwargs

        def chat(self, conversations, params, use_tqdm, **kwargs):
            seen["chat"] = kwargs
            out = types.SimpleNamespace
            return [out(outputs=[out(text=f"answer {c[-1]['content']}", finish_reason="stop")]) for c in conversations]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams))
    backend = VLLMBackend("/models/x", Sampling(n=4, temperature=0.6, top_p=0.95, max_tokens=128, enable_thinking=False),
                          tensor_parallel_size=2)
    items = [({"prompt": [{"role": "user", "content": q}]}, i) for i, q in enumerate(["a", "b"])]
    out = asyncio.run(backend.generate(items))
    assert [g.text for g in out] == ["answer a", "answer b"] and out[0].finish_reason == "stop"
    assert seen["llm"] == {"model": "/models/x", "tensor_parallel_size": 2}
    assert seen["params"] == {"n": 1, "temperature": 0.6, "top_p": 0.95, "top_k": -1, "max_tokens": 128}
    assert seen["chat"] == {"chat_template_kwargs": {"enable_thinking": False}}
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(BadRequest, match="needs vLLM"):
        VLLMBackend("/models/x", Sampling())


def test_vllm_backend_batches_the_tool_modes_turns(monkeypatch):
    """Episodes ask for their turns one at a time; the turns asked for together go to vLLM as one
    batch, with the tool schema, and each episode gets its own answer back."""
    batches: list = []

    class LLM:
        def __init__(self, **kwargs):
            pass

        def chat(self, conversations, params, use_tqdm, **kwargs):
            batches.append((len(conversations), kwargs.get("tools")))
            out = types.SimpleNamespace
            return [out(outputs=[out(text=_reply(c), finish_reason="stop")]) for c in conversations]

    def _reply(conversation):
        if conversation[-1]["role"] == "tool":  # after the tool ran: the final answer
            return f"```python\nprint({conversation[-1]['content'].split()[-1]})\n```"
        code = conversation[-1]["content"]
        return f'<tool_call>\n{{"name": "code_interpreter", "arguments": {{"code": "print({code})"}}}}\n</tool_call>'

    class Sandbox:
        async def run(self, language, code, stdin, limits):
            await asyncio.sleep(0.01 * int(code[6:-1]))  # tool calls finish at different times
            return {"compile": None, "run": {"status": "ok", "stdout": code[6:-1] + "\n", "stderr": ""}}

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=lambda **kw: None))
    backend = VLLMBackend("/models/x", Sampling(n=1))
    tool_agent = agent.ToolAgent(backend, Sandbox(), max_turns=3)
    items = [({"prompt": [{"role": "user", "content": str(i)}]}, 0) for i in range(6)]
    out = asyncio.run(tool_agent.generate(items))
    assert [g.tool_calls for g in out] == [1] * 6
    assert [g.text.splitlines()[-2] for g in out] == [f"print({i})" for i in range(6)]
    # turn 1: one batch of six; turn 2: the answers after the tool, batched as they became ready
    assert batches[0] == (6, [agent.CODE_INTERPRETER_SCHEMA]) and sum(n for n, _ in batches) == 12


def test_vllm_backend_hands_a_failed_batch_to_each_of_its_callers(monkeypatch):
    class LLM:
        def __init__(self, **kwargs):
            pass

        def chat(self, conversations, params, use_tqdm, **kwargs):
            raise RuntimeError("engine died")

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=lambda **kw: None))
    backend = VLLMBackend("/models/x", Sampling(n=1))

    async def main():
        return await asyncio.gather(*(backend.chat([{"role": "user", "content": "x"}]) for _ in range(3)),
                                    return_exceptions=True)

    assert [str(e) for e in asyncio.run(main())] == ["engine died"] * 3


def test_tool_mode_stops_at_the_turn_limit():
    class Looping:
        calls = 0

        async def chat(self, messages, tools=None):
            Looping.calls += 1
            call = {"id": f"c{Looping.calls}", "type": "function",
                    "function": {"name": "code_interpreter", "arguments": json.dumps({"code": "print(1)"})}}
            return {"message": {"role": "assistant", "content": "again", "tool_calls": [call]},
                    "finish_reason": "tool_calls"}

    class Sandbox:
        async def run(self, language, code, stdin, limits):
            return {"compile": None, "run": {"status": "ok", "stdout": "1\n", "stderr": ""}}

    gen = asyncio.run(agent.ToolAgent(Looping(), Sandbox(), max_turns=3).episode([{"role": "user", "content": "x"}]))
    assert Looping.calls == 3 and gen.tool_calls == 3 and gen.text.count("<tool_response>") == 3


def test_tool_mode_limits_are_trainings():
    config = yaml.safe_load((ROOT / "tool_config" / "code_interpreter.yaml").read_text())["tools"][0]["config"]
    from coderl.interpreter import InterpreterSettings

    assert agent.ToolAgent(None, None, 1).settings == InterpreterSettings.from_config(config) == InterpreterSettings()
