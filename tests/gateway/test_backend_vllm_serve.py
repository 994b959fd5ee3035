"""The gateway's `vllm` backend against a real `vllm serve`: vLLM's CPU build (the smoke runs'
environment, scripts/smoke_env.py) serving a tiny random Qwen2 made here (the smoke run's builder),
started with the smoke profile's CPU settings. test_unit_backends.py pins the request the backend
sends; this pins what a real server does with it: the prompt ids are used as ids, the sampled ids
and their logprobs come back (the model's, under the sampling temperature), the gateway's end-of-turn
ids end a generation on the server, the gateway's streaming path works over it, and a session's
deadline cancels the generation on the server, not only in the gateway.

The logprobs are checked against the same weights run by transformers in this process (float32 on
both sides: they agree to 1e-6), which also shows which prompt the server conditioned on."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from coderl.gateway.backends import Generation, OpenAICompatBackend
from tests.gateway.test_gateway import Recording, assert_token_exact, openai_from_stream, run, sse_events
from tests.helpers.poll import wait_for, wait_for_async
from tests.helpers.service import free_port, metric_async

ROOT = Path(__file__).resolve().parents[2]
SMOKE_VENV = Path(os.environ.get("SMOKE_VENV") or ROOT / ".smoke-venv")
MODEL_NAME = "tiny"
# Room for a generation the deadline cuts: at 400 tokens/s (this host, lightly loaded) 32k tokens
# take 80 s. The tiny model says 4096 positions; RoPE has no table, so vLLM is told 32768.
MAX_MODEL_LEN = 32768
DEADLINE_S = 5.0

pytestmark = pytest.mark.slow


def smoke_python(work: Path) -> Path:
    """The smoke environment's python. Under CODERL_TEST_ALL (CI) it is built or brought up to date
    first, by the same step as the smoke runs (a no-op when its stamp is current, so it is built
    once); elsewhere a missing one skips the module (it is 4.2 GB)."""
    if os.environ.get("CODERL_TEST_ALL") == "1":
        steps = ('source scripts/common.sh && source scripts/smoke_profile.sh && RUN="$1" '
                 '&& source scripts/smoke_stages.sh && setup_env')
        proc = subprocess.run(["bash", "-c", steps, "smoke-env", str(work)], cwd=ROOT,
                              capture_output=True, text=True, timeout=1200)
        assert proc.returncode == 0, f"building {SMOKE_VENV} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    elif not (SMOKE_VENV / "bin" / "vllm").exists():
        pytest.skip(f"needs vLLM's CPU build in {SMOKE_VENV} (made by scripts/smoke_pipeline.sh; "
                    "CODERL_TEST_ALL=1 builds it here)")
    return SMOKE_VENV / "bin" / "python"


@dataclass
class VllmServer:
    url: str
    model_dir: Path
    log: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    work = tmp_path_factory.mktemp("vllm")
    python = smoke_python(work)
    model_dir = work / "model"
    build = ("import sys; from pathlib import Path; from coderl.data.qwen_tokenizer import build_tiny_model; "
             "build_tiny_model(Path(sys.argv[1]), hidden_size=128, num_heads=2, seed=0, vocab_ranks=8192)")
    subprocess.run([str(python), "-c", build, str(model_dir)], check=True, capture_output=True, timeout=600)
    port = free_port()  # vllm serve binds its own port (racy, see free_port): a taken one fails the start below
    # the smoke profile's environment (one OpenMP thread, 1 GiB of KV cache, offline) and its rollout
    # settings as flags: eager (no CUDA graphs), float32 (bfloat16 wants AVX-512 BF16); verl's
    # logprobs mode (vLLM's default, raw_logprobs, ignores the temperature)
    serve = ('source scripts/common.sh && source scripts/smoke_profile.sh && exec vllm serve "$@"')
    args = [str(model_dir), "--served-model-name", MODEL_NAME, "--host", "127.0.0.1", "--port", str(port),
            "--dtype", "float32", "--enforce-eager", "--max-model-len", str(MAX_MODEL_LEN), "--max-num-seqs", "2",
            "--logprobs-mode", "processed_logprobs", "--hf-overrides", f'{{"max_position_embeddings": {MAX_MODEL_LEN}}}']
    log = work / "vllm.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(["bash", "-c", serve, "vllm-serve", *args], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, "SMOKE_VENV": str(SMOKE_VENV)})
    url = f"http://127.0.0.1:{port}"

    def health() -> int:
        if proc.poll() is not None:
            raise AssertionError(f"vllm serve exited {proc.returncode}:\n{log.read_text()[-4000:]}")
        return httpx.get(url + "/health", timeout=5).status_code

    try:
        wait_for(health, lambda status: status == 200, what=f"vllm serve to answer /health on {url}",
                 timeout_s=400, interval_s=0.5, ignore=(httpx.TransportError,))
        yield VllmServer(url, model_dir, log)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # vllm serve and its engine core process
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def tokenizer(server: VllmServer) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(server.model_dir)


@pytest.fixture(scope="module")
def fmt(tokenizer: Any) -> Any:
    from coderl.gateway.chat import ChatFormat

    return ChatFormat(tokenizer)


@pytest.fixture(scope="module")
def scorer(server: VllmServer) -> Any:
    """Teacher-forced logprobs of ids after a prompt, under the same weights, at a temperature."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(server.model_dir, dtype=torch.float32).eval()

    def score(prompt: list[int], ids: list[int], temperature: float) -> list[float]:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([prompt + ids])).logits[0].float()
        logp = torch.log_softmax(logits / temperature, dim=-1)
        return [float(logp[len(prompt) - 1 + i, t]) for i, t in enumerate(ids)]

    return score


class Wire:
    """The vLLM answers the backend's own HTTP client received (a response hook on it)."""

    def __init__(self, backend: OpenAICompatBackend) -> None:
        self.answers: list[dict[str, Any]] = []
        backend.http.event_hooks["response"] = [self.keep]

    async def keep(self, response: httpx.Response) -> None:
        await response.aread()
        self.answers.append(response.json())


def backend_for(server: VllmServer, stop_ids: set[int]) -> OpenAICompatBackend:
    return OpenAICompatBackend(server.url + "/v1", MODEL_NAME, stop_ids)


def generate(backend: OpenAICompatBackend, prompt: list[int], max_tokens: int, sampling: dict) -> Generation:
    async def main() -> Generation:
        try:
            return await backend.generate(prompt, max_tokens, sampling, "r")
        finally:
            await backend.aclose()

    return asyncio.run(main())


def chat_prompts(tokenizer: Any) -> tuple[list[int], list[int]]:
    """One user turn as the tokenizer encodes it, and the same text with the user's words one token
    per character: a tokenization the tokenizer never produces, so a server that re-tokenized the
    prompt would condition on the first."""
    head, words, tail = "<|im_start|>user\n", "hello world", "<|im_end|>\n<|im_start|>assistant\n"
    canonical = tokenizer.encode(head + words + tail, add_special_tokens=False)
    per_char = tokenizer.encode(head, add_special_tokens=False)
    for ch in words:
        per_char += tokenizer.encode(ch, add_special_tokens=False)
    per_char += tokenizer.encode(tail, add_special_tokens=False)
    assert per_char != canonical and tokenizer.encode(tokenizer.decode(per_char), add_special_tokens=False) == canonical
    return canonical, per_char


def max_abs_diff(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(1800)  # the first test also starts the server (and, in CI, may build its environment)
def test_token_ids_in_sampled_ids_and_their_logprobs_out(server, tokenizer, fmt, scorer):
    canonical, per_char = chat_prompts(tokenizer)
    temperature = 0.7
    for prompt, other in ((canonical, per_char), (per_char, canonical)):
        backend = backend_for(server, fmt.stop_ids)
        wire = Wire(backend)
        gen = generate(backend, prompt, 12, {"temperature": temperature})
        (answer,) = wire.answers
        choice = answer["choices"][0]
        # the server conditioned on exactly these ids: it echoes them and counts them
        assert choice["prompt_token_ids"] == prompt and answer["usage"]["prompt_tokens"] == len(prompt)
        # the ids are the server's: they decode to its text (a stop token is kept in the ids, not the text)
        assert gen.ids == choice["token_ids"] and 1 <= len(gen.ids) <= 12
        ended = choice["finish_reason"] == "stop"
        assert fmt.decode(gen.ids[:-1] if ended else gen.ids) == choice["text"]
        assert gen.stopped_by_length == (choice["finish_reason"] == "length")
        assert len(gen.logprobs) == len(gen.ids)
        assert all(math.isfinite(lp) and lp <= 0.0 for lp in gen.logprobs), gen.logprobs
        # the model's logprobs of those ids after THIS prompt, under the sampling temperature
        assert max_abs_diff(gen.logprobs, scorer(prompt, gen.ids, temperature)) < 1e-4
        assert max_abs_diff(gen.logprobs, scorer(other, gen.ids, temperature)) > 1e-2


@pytest.mark.timeout(600)
def test_the_gateways_end_of_turn_ids_end_the_generation_on_the_server(server, tokenizer, fmt):
    canonical, _ = chat_prompts(tokenizer)
    greedy = generate(backend_for(server, fmt.stop_ids), canonical, 4, {"temperature": 0})
    stop = greedy.ids[1]  # a token the server itself does not stop on
    assert stop not in fmt.stop_ids
    backend = backend_for(server, fmt.stop_ids | {stop})
    wire = Wire(backend)
    gen = generate(backend, canonical, 4, {"temperature": 0})
    assert gen.ids == greedy.ids[: greedy.ids.index(stop) + 1] and not gen.stopped_by_length
    choice = wire.answers[0]["choices"][0]
    assert (choice["finish_reason"], choice["stop_reason"]) == ("stop", stop)


@pytest.mark.timeout(600)
def test_gateway_streaming_turns_over_the_server_are_token_exact(server, fmt, scorer):
    from coderl.gateway.core import Gateway, SessionConfig

    backend = Recording(backend_for(server, fmt.stop_ids))
    gateway = Gateway(fmt, backend, default=SessionConfig(max_context=1024, sampling={"temperature": 1.0}),
                      auto_open=True)

    async def client_fn(client: httpx.AsyncClient) -> list[tuple[dict, str]]:
        """Two streamed turns, each answer echoed back the way a client assembles it from the chunks."""
        messages: list[dict] = [{"role": "user", "content": "hello world"}]
        streamed = []
        try:
            for i in range(2):
                r = await client.post("/v1/chat/completions", headers={"X-Coderl-Session": "s"},
                                      json={"model": "m", "messages": messages, "max_tokens": 10, "stream": True})
                assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream"), r.text
                assert r.text.rstrip().endswith("data: [DONE]")
                message = openai_from_stream(r.text)
                streamed.append((message, sse_events(r.text)[-1]["choices"][0]["finish_reason"]))
                messages += [message, {"role": "user", "content": f"more {i}"}]
        finally:
            await backend.inner.aclose()
        return streamed

    streamed = run(client_fn, gateway)
    session = gateway.sessions["s"]
    assert session.turns == 2 and session.trajectory.drifts == 0 and len(session.trajectory.branches) == 1
    assert_token_exact(session.trajectory.final(), backend.calls)
    for (prompt, gen, _), (message, finish) in zip(backend.calls, streamed, strict=True):
        # what the client read from the stream is the server's ids, parsed; their logprobs the model's
        turn, _ = fmt.parse(gen.ids, gen.stopped_by_length)
        assert message == turn.message() and finish == turn.finish_reason
        assert max_abs_diff(gen.logprobs, scorer(prompt, gen.ids, 1.0)) < 1e-4


@pytest.mark.timeout(600)
def test_a_session_deadline_cancels_the_generation_on_the_server(server, fmt):
    """Greedy decoding of the random model repeats one token and never ends: the generation would run
    to the context's end (32k tokens, a minute or more here) unless it is cancelled."""
    from coderl.gateway.core import Gateway, SessionConfig

    backend = backend_for(server, fmt.stop_ids)
    gateway = Gateway(fmt, backend, default=SessionConfig(max_context=MAX_MODEL_LEN, timeout_s=DEADLINE_S,
                                                          sampling={"temperature": 0}), auto_open=True)

    async def client_fn(client: httpx.AsyncClient) -> dict[str, float]:
        async with httpx.AsyncClient(timeout=30) as probe:
            def read(name: str, labels: str = ""):
                return metric_async(probe, server.url, name, labels)

            async def finished() -> float:  # requests that ran to a stop or to their length
                return (await read("vllm:request_success_total", 'finished_reason="stop"')
                        + await read("vllm:request_success_total", 'finished_reason="length"'))

            finished_before = await finished()
            tokens_before = await read("vllm:generation_tokens_total")
            started = time.monotonic()
            turn = asyncio.create_task(client.post("/v1/chat/completions", headers={"X-Coderl-Session": "long"},
                                                   json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
            await wait_for_async(lambda: read("vllm:num_requests_running"), lambda n: n == 1,
                                 what="the turn's generation running on the vLLM server", timeout_s=DEADLINE_S)
            r = await turn
            aborted = time.monotonic()
            assert r.status_code == 408, r.text
            await wait_for_async(lambda: read("vllm:num_requests_running"), lambda n: n == 0,
                                 what="vLLM to stop running the aborted generation", timeout_s=30)
            stopped = time.monotonic()
            after = await client.post("/v1/chat/completions", headers={"X-Coderl-Session": "long"},
                                      json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
            assert after.status_code == 409, after.text
            await backend.aclose()
            return {"finished": await finished() - finished_before,
                    "generated": await read("vllm:generation_tokens_total") - tokens_before,
                    "ran_s": aborted - started, "stop_s": stopped - aborted}

    seen = run(client_fn, gateway)
    asked = MAX_MODEL_LEN - len(gateway.sessions["long"].trajectory.final().ids)  # the turn's max_new_tokens
    assert gateway.sessions["long"].state == "aborted"
    # the request ended on the server without finishing (no stop, no length), short of what it asked for
    assert seen["finished"] == 0 and 0 < seen["generated"] < asked, seen
    # and the server stopped long before the rest of the generation could have run at its own pace
    rest_s = (asked - seen["generated"]) / (seen["generated"] / seen["ran_s"])
    print(f"deadline abort: {seen}; the rest of the generation would have taken {rest_s:.0f} s")
    assert seen["stop_s"] < rest_s / 4, (seen, rest_s)
