"""The interception gateway over real HTTP against a tiny random Qwen2 model (built locally, no
downloads): token-exact records across turns with tool calls in both dialects, plain and
streaming; drift forks; context clamping; the session lock; timeouts.

Tool calls: a random model never writes one, so those tests use the replay backend with outputs
tokenized one CHARACTER per token (never how the tokenizer would encode them) and logprobs
teacher-forced from the same random model: a gateway that re-tokenized anything would not find
these ids in its record."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.helpers.qwen_tokenizer import build_tiny_model

pytestmark = pytest.mark.verl

TOOLS = [{"type": "function", "function": {"name": "bash", "description": "run a command",
                                           "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}]
ANTHROPIC_TOOLS = [{"name": "bash", "description": "run a command",
                    "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]


@pytest.fixture(scope="module")
def model_dir():
    return build_tiny_model()


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


@pytest.fixture(scope="module")
def fmt(tokenizer):
    from coderl.gateway.chat import ChatFormat

    return ChatFormat(tokenizer)


@pytest.fixture(scope="module")
def model(model_dir, fmt):
    from coderl.gateway.backends import TransformersBackend

    return TransformersBackend(str(model_dir), fmt.stop_ids)


class Recording:
    """Wraps a backend and keeps every (prompt ids, generation) it served."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[list[int], Any]] = []

    async def generate(self, prompt_ids, max_tokens, sampling, request_id):
        gen = await self.inner.generate(prompt_ids, max_tokens, sampling, request_id)
        self.calls.append((list(prompt_ids), gen, max_tokens))
        return gen


def char_ids(tokenizer, text: str) -> list[int]:
    """One token per character (plus end of turn): a tokenization the tokenizer never produces."""
    out: list[int] = []
    i = 0
    specials = ("<tool_call>", "</tool_call>", "<think>", "</think>")
    while i < len(text):
        special = next((s for s in specials if text.startswith(s, i)), None)
        if special:
            out.append(tokenizer.convert_tokens_to_ids(special))
            i += len(special)
        else:
            out.extend(tokenizer.encode(text[i], add_special_tokens=False))
            i += 1
    return out + [tokenizer.convert_tokens_to_ids("<|im_end|>")]


def tool_call_text(cmd: str, thought: str) -> str:
    body = json.dumps({"name": "bash", "arguments": {"cmd": cmd}})
    return f"<think>\n{thought}\n</think>\n\nRunning it.\n<tool_call>\n{body}\n</tool_call>"


def run(coro_fn: Callable, gateway: Any, *, admin: bool = False) -> Any:
    from coderl.gateway.server import serve

    async def main():
        served = await serve(gateway, ["127.0.0.1:0"], admin_addresses=("127.0.0.1:0",) if admin else ())
        try:
            async with httpx.AsyncClient(base_url="http://" + served.addresses[0], timeout=120) as client:
                return await coro_fn(client)
        finally:
            await served.stop()

    return asyncio.run(main())


def make_gateway(fmt, backend, **config):
    from coderl.gateway.core import Gateway, SessionConfig

    return Gateway(fmt, backend, default=SessionConfig(**config), auto_open=True)


def assert_token_exact(branch, calls) -> None:
    """Every generation's prompt is a prefix of the record, its sampled ids sit right after it with
    mask 1 and the backend's logprobs, and everything else is mask 0."""
    sampled = set()
    for prompt, gen, _ in calls:
        assert branch.ids[: len(prompt)] == prompt
        end = len(prompt) + len(gen.ids)
        assert branch.ids[len(prompt):end] == gen.ids
        assert branch.mask[len(prompt):end] == [1] * len(gen.ids)
        assert branch.logprobs[len(prompt):end] == pytest.approx(gen.logprobs)
        sampled.update(range(len(prompt), end))
    assert all(m == (1 if i in sampled else 0) for i, m in enumerate(branch.mask))


def sse_events(text: str) -> list[dict]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]


def openai_from_stream(text: str) -> dict:
    """Assemble a chat message from OpenAI SSE chunks the way clients do."""
    msg: dict[str, Any] = {"role": "assistant", "content": ""}
    calls: dict[int, dict] = {}
    for chunk in sse_events(text):
        delta = chunk["choices"][0]["delta"]
        msg["content"] += delta.get("content") or ""
        if "reasoning_content" in delta:
            msg["reasoning_content"] = delta["reasoning_content"]
        for c in delta.get("tool_calls") or []:
            slot = calls.setdefault(c["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            slot["id"] = c.get("id") or slot["id"]
            slot["function"]["name"] += c.get("function", {}).get("name") or ""
            slot["function"]["arguments"] += c.get("function", {}).get("arguments") or ""
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg


# ---------------------------------------------------------------------------------------------


def test_random_model_three_turns_token_exact(fmt, model):
    backend = Recording(model)
    gateway = make_gateway(fmt, backend, max_context=4096)

    async def client_fn(client):
        messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hello"}]
        for turn in range(3):
            r = await client.post("/v1/chat/completions", headers={"Authorization": "Bearer s1"},
                                  json={"model": "m", "messages": messages, "max_tokens": 6, "tools": TOOLS})
            assert r.status_code == 200, r.text
            messages.append(r.json()["choices"][0]["message"])
            messages.append({"role": "user", "content": f"go on {turn}"})

    run(client_fn, gateway)
    session = gateway.sessions["s1"]
    assert session.turns == 3 and session.trajectory.drifts == 0 and len(session.trajectory.branches) == 1
    branch = session.trajectory.final()
    assert_token_exact(branch, backend.calls)
    # the logprobs are the model's own for those ids (teacher-forced recomputation)
    prompt, gen, _ = backend.calls[-1]
    assert model.score(prompt, gen.ids) == pytest.approx(gen.logprobs, abs=1e-4)


def test_openai_tool_calls_streaming_three_turns(fmt, tokenizer, model):
    outputs = [char_ids(tokenizer, tool_call_text(f"ls dir{i}", f"step {i}")) for i in range(3)]
    outputs.append(char_ids(tokenizer, "All done."))
    from coderl.gateway.backends import ReplayBackend

    backend = Recording(ReplayBackend(outputs, tokenizer, fmt.stop_ids, scorer=model))
    gateway = make_gateway(fmt, backend, max_context=4096)

    async def client_fn(client):
        messages = [{"role": "user", "content": "list things"}]
        finishes = []
        for i in range(4):
            r = await client.post("/s/s2/v1/chat/completions",
                                  json={"model": "m", "messages": messages, "tools": TOOLS, "stream": True})
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            assert r.text.rstrip().endswith("data: [DONE]")
            finishes.append(sse_events(r.text)[-1]["choices"][0]["finish_reason"])
            msg = openai_from_stream(r.text)
            if i < 3:
                assert msg["reasoning_content"] == f"step {i}" and msg["content"] == "Running it."
                call = msg["tool_calls"][0]
                assert call["function"]["name"] == "bash"
                assert json.loads(call["function"]["arguments"]) == {"cmd": f"ls dir{i}"}
                # the client re-serialises arguments its own way and drops reasoning: not a drift
                call["function"]["arguments"] = json.dumps(json.loads(call["function"]["arguments"]), indent=2)
                msg.pop("reasoning_content")
                messages += [msg, {"role": "tool", "tool_call_id": call["id"], "content": f"file{i}.txt"}]
        return finishes

    finishes = run(client_fn, gateway)
    assert finishes == ["tool_calls"] * 3 + ["stop"]
    session = gateway.sessions["s2"]
    assert session.trajectory.drifts == 0
    branch = session.trajectory.final()
    assert_token_exact(branch, backend.calls)
    for out in outputs:  # the char-level ids are in the record as sampled, not re-tokenized
        assert out != tokenizer.encode(tokenizer.decode(out), add_special_tokens=False)
    text = tokenizer.decode(branch.ids)
    assert "<think>\nstep 0\n</think>" in text  # reasoning kept in the re-rendered history
    assert "<tool_response>\nfile2.txt\n</tool_response>" in text


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_tool_use_three_turns(fmt, tokenizer, model, stream):
    outputs = [char_ids(tokenizer, tool_call_text(f"cat f{i}", f"think {i}")) for i in range(3)]
    outputs.append(char_ids(tokenizer, "Finished."))
    from coderl.gateway.backends import ReplayBackend

    backend = Recording(ReplayBackend(outputs, tokenizer, fmt.stop_ids, scorer=model))
    gateway = make_gateway(fmt, backend, max_context=4096)

    async def client_fn(client):
        messages = [{"role": "user", "content": [{"type": "text", "text": "read the files"}]}]
        stops = []
        for i in range(4):
            r = await client.post("/v1/messages", headers={"x-api-key": "s3", "anthropic-version": "2023-06-01"},
                                  json={"model": "m", "system": "Be brief.", "messages": messages,
                                        "tools": ANTHROPIC_TOOLS, "max_tokens": 512, "stream": stream})
            assert r.status_code == 200, r.text
            if stream:
                events = sse_events(r.text)
                assert [e["type"] for e in events][0] == "message_start" and events[-1]["type"] == "message_stop"
                blocks: dict[int, dict] = {}
                for e in events:
                    if e["type"] == "content_block_start":
                        blocks[e["index"]] = dict(e["content_block"])
                    elif e["type"] == "content_block_delta":
                        d, b = e["delta"], blocks[e["index"]]
                        if d["type"] == "text_delta":
                            b["text"] += d["text"]
                        elif d["type"] == "thinking_delta":
                            b["thinking"] += d["thinking"]
                        else:
                            b["input"] = json.loads(d["partial_json"])
                content = [blocks[k] for k in sorted(blocks)]
                stop = next(e for e in events if e["type"] == "message_delta")["delta"]["stop_reason"]
            else:
                content, stop = r.json()["content"], r.json()["stop_reason"]
            stops.append(stop)
            if i < 3:
                kinds = [b["type"] for b in content]
                assert kinds == ["thinking", "text", "tool_use"]
                use = content[2]
                assert use["name"] == "bash" and use["input"] == {"cmd": f"cat f{i}"}
                messages += [{"role": "assistant", "content": content},
                             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"],
                                                           "content": f"data {i}"}]}]
        return stops

    stops = run(client_fn, gateway)
    assert stops == ["tool_use"] * 3 + ["end_turn"]
    session = gateway.sessions["s3"]
    assert session.trajectory.drifts == 0
    assert_token_exact(session.trajectory.final(), backend.calls)


def test_retokenizing_client_forks_and_demotes(fmt, tokenizer, model):
    """A client that rewrites its history (here: re-encodes the model's text with its own
    normalisation, as a re-tokenizing client would) is detected; the record forks, the turn the
    fork cuts is demoted to mask 0, the earlier branch is kept whole."""
    from coderl.gateway.backends import ReplayBackend

    head = tokenizer.encode("First answer,", add_special_tokens=False)
    outputs = [head + char_ids(tokenizer, "  with  double  spaces."), char_ids(tokenizer, "Second."),
               char_ids(tokenizer, "Third.")]
    backend = Recording(ReplayBackend(outputs, tokenizer, fmt.stop_ids, scorer=model))
    gateway = make_gateway(fmt, backend, max_context=4096)

    async def client_fn(client):
        messages = [{"role": "user", "content": "q1"}]
        for i in range(3):
            r = await client.post("/v1/chat/completions", headers={"X-Coderl-Session": "s4"},
                                  json={"messages": messages})
            msg = r.json()["choices"][0]["message"]
            if i == 0:
                msg["content"] = " ".join(msg["content"].split())  # the client's own normalisation
            messages += [msg, {"role": "user", "content": f"q{i + 2}"}]

    run(client_fn, gateway)
    traj = gateway.sessions["s4"].trajectory
    assert traj.drifts == 1 and len(traj.branches) == 2
    first, second = traj.branches
    assert_token_exact(first, backend.calls[:1])  # the parent branch is intact
    assert len(first.turns) == 1
    # the fork point is inside turn 1's tokens: its kept head is demoted, never trained twice
    turn = first.turns[0]
    assert second.demoted == len(head) and second.ids[turn.start:turn.start + len(head)] == head
    assert sum(second.mask[turn.start:turn.start + len(head)]) == 0
    assert_token_exact(second, backend.calls[1:])
    summary = gateway.sessions["s4"].summary()
    assert summary["dropped_sampled_tokens"] == turn.length  # what a final-branch reduction loses


def test_max_new_tokens_clamped_to_remaining_context(fmt, tokenizer, model):
    backend = Recording(model)
    gateway = make_gateway(fmt, backend, max_context=120, max_response=40)

    async def client_fn(client):
        messages = [{"role": "user", "content": "hi"}]
        r = await client.post("/v1/chat/completions", headers={"Authorization": "Bearer s5"},
                              json={"messages": messages, "max_tokens": 1000})
        assert r.status_code == 200
        messages += [r.json()["choices"][0]["message"], {"role": "user", "content": "more " * 40}]
        r2 = await client.post("/v1/chat/completions", headers={"Authorization": "Bearer s5"},
                               json={"messages": messages, "max_tokens": 1000})
        return r, r2

    r, r2 = run(client_fn, gateway)
    prompt, gen, asked = backend.calls[0]
    assert asked == min(120 - len(prompt), 40)
    assert r2.status_code == 400 and r2.json()["error"]["code"] == "context_length_exceeded"
    assert gateway.sessions["s5"].truncated
    assert len(backend.calls) == 1


def test_concurrent_calls_of_one_session_are_serialised(fmt, tokenizer):
    from coderl.gateway.backends import Generation

    class Slow:
        def __init__(self):
            self.active = 0
            self.peak = 0

        async def generate(self, prompt_ids, max_tokens, sampling, request_id):
            self.active += 1
            self.peak = max(self.peak, self.active)
            await asyncio.sleep(0.2)
            self.active -= 1
            return Generation(tokenizer.encode("ok", add_special_tokens=False) + [tokenizer.eos_token_id], None, False)

    backend = Slow()
    gateway = make_gateway(fmt, backend, max_context=4096)

    async def client_fn(client):
        body = {"messages": [{"role": "user", "content": "x"}]}
        rs = await asyncio.gather(*(client.post("/v1/chat/completions", headers={"Authorization": "Bearer s6"},
                                                json=body) for _ in range(3)))
        return [r.status_code for r in rs]

    assert run(client_fn, gateway) == [200, 200, 200]
    assert backend.peak == 1
    traj = gateway.sessions["s6"].trajectory
    # the same request three times: the 2nd and 3rd fork from the shared prompt (drifts), each
    # output is recorded exactly once with mask 1
    assert traj.drifts == 2 and sum(len(b.turns) for b in traj.branches) == 3


def test_session_timeout_aborts_cleanly(fmt, tokenizer):
    from coderl.gateway.core import Gateway

    class Hang:
        async def generate(self, prompt_ids, max_tokens, sampling, request_id):
            await asyncio.sleep(60)

    gateway = Gateway(fmt, Hang())

    async def client_fn(client):
        r = await client.post("/sessions", json={"id": "s7", "timeout_s": 0.5, "max_context": 4096})
        assert r.status_code == 200
        r1 = await client.post("/v1/chat/completions", headers={"Authorization": "Bearer s7"},
                               json={"messages": [{"role": "user", "content": "x"}]})
        r2 = await client.post("/v1/chat/completions", headers={"Authorization": "Bearer s7"},
                               json={"messages": [{"role": "user", "content": "x"}]})
        r3 = await client.post("/v1/chat/completions", headers={"Authorization": "Bearer nope"},
                               json={"messages": [{"role": "user", "content": "x"}]})
        r4 = await client.delete("/sessions/s7")
        return r1, r2, r3, r4

    r1, r2, r3, r4 = run(client_fn, gateway, admin=True)
    assert r1.status_code == 408 and r2.status_code == 409 and r3.status_code == 404
    # answered from the errors' attributes: http_status, and api_code as the OpenAI error code
    assert [(r.json()["error"]["type"], r.json()["error"]["code"]) for r in (r1, r2, r3)] == \
        [("invalid_request_error", "session_error")] * 3
    assert r4.status_code == 200 and r4.json()["state"] == "aborted" and r4.json()["reason"] == "timeout"


def test_bad_requests_get_one_line_errors(fmt, model):
    gateway = make_gateway(fmt, model, max_context=4096)

    async def client_fn(client):
        h = {"Authorization": "Bearer s8"}
        return [await client.post("/v1/chat/completions", headers=h, content=b"{not json"),
                await client.post("/v1/chat/completions", headers=h, json={"messages": []}),
                await client.post("/v1/messages", headers=h, json={"messages": [{"role": "robot", "content": "x"}]}),
                await client.post("/v1/chat/completions", headers=h,
                                  json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}),
                await client.post("/sessions", json={"id": "x"})]  # no admin routes on this app

    rs = run(client_fn, gateway)
    assert [r.status_code for r in rs] == [400, 400, 400, 400, 404]
    assert "JSON" in rs[0].json()["error"]["message"]
    assert rs[2].json()["type"] == "error"


def test_unix_socket_listener(fmt, model, tmp_path):
    from coderl.gateway.server import serve

    gateway = make_gateway(fmt, model, max_context=4096)
    path = tmp_path / "gw.sock"

    async def main():
        served = await serve(gateway, [f"unix:{path}"])
        try:
            transport = httpx.AsyncHTTPTransport(uds=str(path))
            async with httpx.AsyncClient(transport=transport, base_url="http://gateway", timeout=60) as client:
                return await client.post("/v1/chat/completions", headers={"Authorization": "Bearer s9"},
                                         json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 2})
        finally:
            await served.stop()

    r = asyncio.run(main())
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 2


def test_admin_routes_take_the_operators_api_token(fmt, monkeypatch):
    """With CODERL_API_TOKEN set the admin routes (open, read, close a session) need it, as Bearer or
    X-Coderl-Token (401 otherwise); the model routes stay named by the session id."""
    from coderl.gateway.core import Gateway

    class Idle:
        async def generate(self, prompt_ids, max_tokens, sampling, request_id):
            raise AssertionError("no generation in this test")

    monkeypatch.setenv("CODERL_API_TOKEN", "op-token")
    gateway = Gateway(fmt, Idle())

    async def client_fn(client):
        token = {"Authorization": "Bearer op-token"}
        return [await client.post("/sessions", json={"id": "s9"}),
                await client.post("/sessions", json={"id": "s9"}, headers={"Authorization": "Bearer s9"}),
                await client.post("/sessions", json={"id": "s9"}, headers=token),
                await client.get("/sessions/s9"),
                await client.get("/sessions/s9", headers={"X-Coderl-Token": "op-token"}),
                await client.delete("/sessions/s9"),
                await client.get("/v1/models"),
                await client.delete("/sessions/s9", headers=token)]

    rs = run(client_fn, gateway, admin=True)
    assert [r.status_code for r in rs] == [401, 401, 200, 401, 200, 401, 200, 200], [r.text for r in rs]
    assert rs[0].headers["www-authenticate"] == "Bearer"
