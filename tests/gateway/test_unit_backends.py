"""coderl.gateway.backends on its own: each backend's ids, logprobs and length stop, and the errors a
generation server's failures become. The vLLM / SGLang servers are stood in for by a real HTTP
server on 127.0.0.1 answering in their wire formats; verl's server manager by an object with its
``generate`` signature (verl's interface, not ours); the Transformers backend runs the tiny offline
Qwen model."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from coderl.errors import BadRequest, ServiceUnavailable
from coderl.gateway.backends import OpenAICompatBackend, ReplayBackend, TransformersBackend, VerlBackend

STOP = 99


# ------------------------------------------------------------------ verl's server manager


@dataclass
class VerlOutput:
    token_ids: list[int]
    log_probs: list[float] | None
    stop_reason: str = "completed"


class ServerManager:
    """verl's ``generate(request_id=, prompt_ids=, sampling_params=)``, answering a fixed output."""

    def __init__(self, out: VerlOutput) -> None:
        self.out, self.calls = out, []

    async def generate(self, *, request_id, prompt_ids, sampling_params):
        self.calls.append((request_id, prompt_ids, sampling_params))
        return self.out


def test_verl_backend_asks_for_logprobs_and_clamps_to_max_tokens():
    manager = ServerManager(VerlOutput([5, 6, 7, 8], [-1.0, -2.0, -3.0, -4.0]))
    gen = asyncio.run(VerlBackend(manager, {STOP}).generate([1, 2], 3, {"temperature": 0.7}, "session-1"))
    assert (gen.ids, gen.logprobs, gen.stopped_by_length) == ([5, 6, 7], [-1.0, -2.0, -3.0], True)
    assert manager.calls == [("session-1", [1, 2], {"temperature": 0.7, "max_tokens": 3, "logprobs": True})]


def test_verl_backend_end_of_turn_and_missing_logprobs():
    gen = asyncio.run(VerlBackend(ServerManager(VerlOutput([5, STOP], None)), {STOP}).generate([1], 2, {}, "s"))
    assert (gen.ids, gen.logprobs, gen.stopped_by_length) == ([5, STOP], None, False)  # the stop token, not the limit


def test_verl_backend_abort_is_the_servers_failure():
    backend = VerlBackend(ServerManager(VerlOutput([5], [-1.0], stop_reason="aborted")), {STOP})
    with pytest.raises(ServiceUnavailable, match="aborted"):
        asyncio.run(backend.generate([1], 4, {}, "s"))


# ------------------------------------------------------------------ vLLM / SGLang over HTTP


class GenerationServer:
    """A real HTTP server on 127.0.0.1 that answers what ``reply(path, body)`` returns: (status, json)."""

    def __init__(self, reply) -> None:
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                seen.append((self.path, self.headers["Authorization"], body))
                status, answer = reply(self.path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> GenerationServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def generate(backend: OpenAICompatBackend, prompt: list[int], max_tokens: int, sampling: dict):
    async def main():
        try:
            return await backend.generate(prompt, max_tokens, sampling, "rid")
        finally:
            await backend.aclose()

    return asyncio.run(main())


def test_vllm_completions_with_token_ids():
    def reply(path, body):
        return 200, {"choices": [{"token_ids": [7, STOP], "logprobs": {"token_logprobs": [-0.5, -0.25]}}]}

    with GenerationServer(reply) as server:
        backend = OpenAICompatBackend(server.url + "/v1/", "qwen", {STOP}, api_key="k")
        gen = generate(backend, [1, 2, 3], 8, {"temperature": 0.6, "top_p": 0.9, "seed": 1, "n": 4})
    assert (gen.ids, gen.logprobs, gen.stopped_by_length) == ([7, STOP], [-0.5, -0.25], False)
    ((path, auth, body),) = server.seen
    assert path == "/v1/completions" and auth == "Bearer k"  # the base URL's /v1 is not doubled
    assert body == {"model": "qwen", "prompt": [1, 2, 3], "max_tokens": 8, "logprobs": 0, "return_token_ids": True,
                    "skip_special_tokens": False, "stop_token_ids": [STOP], "temperature": 0.6,
                    "top_p": 0.9}  # unknown knobs left out; the gateway's end-of-turn ids stop the server


def test_sglang_generate_with_input_ids():
    def reply(path, body):
        return 200, {"meta_info": {"output_token_logprobs": [[-0.1, 7, None], [-0.2, 8, None]]}}

    with GenerationServer(reply) as server:
        gen = generate(OpenAICompatBackend(server.url, "m", {STOP}, flavor="sglang"), [4], 2, {"top_k": 5})
    assert (gen.ids, gen.logprobs, gen.stopped_by_length) == ([7, 8], [-0.1, -0.2], True)
    ((path, _, body),) = server.seen
    assert path == "/generate" and body["input_ids"] == [4]
    assert body["sampling_params"] == {"max_new_tokens": 2, "skip_special_tokens": False, "stop_token_ids": [STOP],
                                       "top_k": 5}


@pytest.mark.parametrize("status, answer, error", [
    (500, {"error": "boom"}, "HTTP 500"),
    (200, {"choices": [{"text": "no ids"}]}, "return_token_ids"),
])
def test_a_generation_servers_failures_are_service_unavailable(status, answer, error):
    with GenerationServer(lambda path, body: (status, answer)) as server, pytest.raises(ServiceUnavailable, match=error):
        generate(OpenAICompatBackend(server.url, "m", {STOP}), [1], 4, {})


def test_an_unreachable_generation_server_is_service_unavailable():
    import socket

    with socket.socket() as held:  # bound, not listening: connections are refused
        held.bind(("127.0.0.1", 0))
        backend = OpenAICompatBackend(f"http://127.0.0.1:{held.getsockname()[1]}", "m", {STOP})
        with pytest.raises(ServiceUnavailable, match="ConnectError"):
            generate(backend, [1], 4, {})


@pytest.mark.parametrize("url, flavor, error", [("http://x", "tgi", "flavor"), ("x:8000", "vllm", "http")])
def test_bad_backend_settings_are_bad_requests(url, flavor, error):
    with pytest.raises(BadRequest, match=error):
        OpenAICompatBackend(url, "m", {STOP}, flavor=flavor)


# ------------------------------------------------------------------ in-process and scripted


@pytest.fixture(scope="module")
def model(model_dir, tokenizer):  # model_dir, tokenizer: tests/helpers/tiny_model.py
    return TransformersBackend(str(model_dir), {tokenizer.convert_tokens_to_ids("<|im_end|>")})


def test_transformers_greedy_is_reproducible_and_its_logprobs_are_the_models(model, tokenizer):
    prompt = tokenizer.encode("<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)
    a = asyncio.run(model.generate(prompt, 6, {"temperature": 0}, "a"))
    b = asyncio.run(model.generate(prompt, 6, {"temperature": 0}, "b"))
    assert a.ids == b.ids and len(a.ids) == len(a.logprobs) <= 6
    assert a.stopped_by_length == (len(a.ids) == 6 and a.ids[-1] not in model.stop_ids)
    assert model.score(prompt, a.ids) == pytest.approx(a.logprobs, abs=1e-4)  # teacher-forced = sampled
    assert all(lp <= 0.0 for lp in a.logprobs)


def test_replay_plays_each_session_its_script(tokenizer, model):
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    replay = ReplayBackend(["Hello there.", [5, 6, 7]], tokenizer, {eos}, fallback="Bye.")

    def play(session: str, max_tokens: int = 50):
        return asyncio.run(replay.generate([1, 2], max_tokens, {}, session))

    first = play("s1")
    assert first.ids == tokenizer.encode("Hello there.", add_special_tokens=False) + [eos]
    assert first.logprobs == [0.0] * len(first.ids) and not first.stopped_by_length
    assert play("s2").ids == first.ids  # another session starts at the top of the script
    raw = play("s1")
    assert raw.ids == [5, 6, 7] and raw.stopped_by_length is False  # used as is, and under the limit
    assert play("s1").ids == tokenizer.encode("Bye.", add_special_tokens=False) + [eos]
    cut = play("s2", max_tokens=2)
    assert cut.ids == [5, 6] and cut.stopped_by_length

    scored = ReplayBackend(["Hi."], tokenizer, {eos}, scorer=model)
    gen = asyncio.run(scored.generate([1, 2], 50, {}, "s"))
    assert gen.logprobs == pytest.approx(model.score([1, 2], gen.ids), abs=1e-6)
