"""Token-level generation backends for the gateway: token ids in, sampled ids and logprobs out.

- `VerlBackend`: verl's rollout server manager (``LLMServerClient.generate``), the training path.
- `OpenAICompatBackend`: a vLLM server (``/v1/completions`` with a token-id prompt and
  ``return_token_ids``) or an SGLang server (``/generate`` with ``input_ids``), for eval and
  standalone use. Neither ever sees chat text, so nothing is re-tokenized on the server side.
- `TransformersBackend`: a Hugging Face model in-process (CPU tests, small models).
- `ReplayBackend`: scripted outputs, per session, for deterministic tests and demos: a random
  model cannot drive a harness through a task, a script can. Logprobs come from a scorer model
  when one is given (teacher-forced), else 0.0.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Protocol

from coderl.errors import BadRequest, ServiceUnavailable


@dataclass
class Generation:
    ids: list[int]
    logprobs: list[float] | None
    stopped_by_length: bool
    weights_version: int | None = None  # the policy version that sampled it, where the backend knows (verl)


class TokenBackend(Protocol):
    async def generate(self, prompt_ids: list[int], max_tokens: int, sampling: dict[str, Any],
                       request_id: str) -> Generation: ...


def _length_stopped(ids: list[int], max_tokens: int, stop_ids: set[int]) -> bool:
    return len(ids) >= max_tokens and not (ids and ids[-1] in stop_ids)


class VerlBackend:
    """verl's async rollout server manager. The session id is the request id, so verl's sticky
    routing keeps a session on one server (prefix cache). Each output carries the weights version
    that sampled it (verl's ``global_steps``), which verl's trainer needs back per trajectory;
    ``last_version`` is the newest one seen, for an episode that never reached the model."""

    def __init__(self, server_manager: Any, stop_ids: set[int]) -> None:
        self.server_manager = server_manager
        self.stop_ids = stop_ids
        self.last_version: int | None = None

    async def generate(self, prompt_ids: list[int], max_tokens: int, sampling: dict[str, Any],
                       request_id: str) -> Generation:
        params = {**sampling, "max_tokens": max_tokens}
        params.setdefault("logprobs", True)
        out = await self.server_manager.generate(request_id=request_id, prompt_ids=list(prompt_ids),
                                                 sampling_params=params)
        ids = list(out.token_ids)[:max_tokens]
        logprobs = list(out.log_probs)[: len(ids)] if out.log_probs is not None else None
        if out.stop_reason == "aborted":
            raise ServiceUnavailable("the rollout server aborted the generation")
        version = (getattr(out, "extra_fields", None) or {}).get("global_steps")
        if version is not None:
            self.last_version = version
        return Generation(ids, logprobs, _length_stopped(ids, max_tokens, self.stop_ids), version)


class OpenAICompatBackend:
    """A vLLM (``flavor="vllm"``) or SGLang (``flavor="sglang"``) server given token ids.

    The logprobs are whatever the server's logprobs mode computes: ``vllm serve`` defaults to
    ``raw_logprobs`` (the model's, before temperature), so a server for training is started with
    ``--logprobs-mode processed_logprobs``, verl's setting (those of the distribution sampled from)."""

    def __init__(self, base_url: str, model: str, stop_ids: set[int], *, flavor: str = "vllm",
                 timeout_s: float = 600.0, api_key: str = "EMPTY") -> None:
        import httpx

        if flavor not in ("vllm", "sglang"):
            raise BadRequest(f"flavor must be vllm or sglang, got {flavor!r}")
        if not base_url.startswith(("http://", "https://")):
            raise BadRequest(f"backend URL must be http(s)://, got {base_url!r}")
        self.base = base_url.rstrip("/").removesuffix("/v1")
        self.model, self.flavor, self.stop_ids = model, flavor, stop_ids
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0),
                                      headers={"Authorization": f"Bearer {api_key}"})

    async def generate(self, prompt_ids: list[int], max_tokens: int, sampling: dict[str, Any],
                       request_id: str) -> Generation:
        import httpx

        knobs = {k: sampling[k] for k in ("temperature", "top_p", "top_k", "repetition_penalty") if k in sampling}
        # The gateway's end-of-turn ids, sent as the server's stop ids: a server stops only on the
        # model's eos (its generation config), so without them vLLM 0.27 went on past an end of turn
        # the gateway knows (a base model's config names <|endoftext|>, a chat turn ends at <|im_end|>).
        # vLLM returns the stop id as the last of the ids (not in its text), as the gateway expects.
        stops = sorted(self.stop_ids)
        try:
            if self.flavor == "vllm":
                body = {"model": self.model, "prompt": list(prompt_ids), "max_tokens": max_tokens, "logprobs": 0,
                        "return_token_ids": True, "skip_special_tokens": False, "stop_token_ids": stops, **knobs}
                r = await self.http.post(f"{self.base}/v1/completions", json=body)
            else:
                body = {"input_ids": list(prompt_ids), "return_logprob": True, "rid": None,
                        "sampling_params": {"max_new_tokens": max_tokens, "skip_special_tokens": False,
                                            "stop_token_ids": stops, **knobs}}
                r = await self.http.post(f"{self.base}/generate", json=body)
        except httpx.TransportError as exc:
            raise ServiceUnavailable(f"generation server {self.base}: {type(exc).__name__}: {exc}") from exc
        if r.status_code != 200:
            raise ServiceUnavailable(f"generation server {self.base}: HTTP {r.status_code}: {r.text[:200]}")
        data = r.json()
        try:
            if self.flavor == "vllm":
                choice = data["choices"][0]
                ids = list(choice["token_ids"])
                lp = (choice.get("logprobs") or {}).get("token_logprobs")
                logprobs = [float(x) for x in lp] if lp is not None else None
            else:
                pairs = data["meta_info"]["output_token_logprobs"]
                ids = [int(p[1]) for p in pairs]
                logprobs = [float(p[0]) for p in pairs]
        except (KeyError, IndexError, TypeError) as exc:
            raise ServiceUnavailable(f"generation server {self.base} returned no token ids "
                                     f"(vLLM needs return_token_ids support, >= 0.10.2): {exc!r}") from exc
        return Generation(ids, logprobs, _length_stopped(ids, max_tokens, self.stop_ids))

    async def aclose(self) -> None:
        await self.http.aclose()


class TransformersBackend:
    """A causal LM in this process. One generation at a time (a lock): it is for tests and tiny
    models, not throughput."""

    def __init__(self, model_dir: str, stop_ids: set[int], *, seed: int = 0, threads: int | None = 1) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        if threads:  # a tiny model gains nothing from more, and a busy host loses a lot (8 s vs 2 s per 20 tokens)
            torch.set_num_threads(threads)
        self.torch = torch
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.stop_ids = stop_ids
        self.generator = torch.Generator().manual_seed(seed)
        self.lock = threading.Lock()

    async def generate(self, prompt_ids: list[int], max_tokens: int, sampling: dict[str, Any],
                       request_id: str) -> Generation:
        return await asyncio.to_thread(self._generate, list(prompt_ids), max_tokens, sampling)

    def _generate(self, prompt_ids: list[int], max_tokens: int, sampling: dict[str, Any]) -> Generation:
        torch = self.torch
        temperature = float(sampling.get("temperature", 1.0))
        ids: list[int] = []
        logprobs: list[float] = []
        with self.lock, torch.no_grad():
            past = None
            inputs = torch.tensor([prompt_ids])
            for _ in range(max_tokens):
                out = self.model(input_ids=inputs, past_key_values=past, use_cache=True)
                past = out.past_key_values
                logits = out.logits[0, -1].float()
                logp = torch.log_softmax(logits, dim=-1)
                if temperature <= 0:
                    token = int(torch.argmax(logits))
                else:
                    probs = torch.softmax(logits / temperature, dim=-1)
                    token = int(torch.multinomial(probs, 1, generator=self.generator))
                ids.append(token)
                logprobs.append(float(logp[token]))
                if token in self.stop_ids:
                    break
                inputs = torch.tensor([[token]])
        return Generation(ids, logprobs, _length_stopped(ids, max_tokens, self.stop_ids))

    def score(self, prompt_ids: list[int], ids: list[int]) -> list[float]:
        """Teacher-forced logprobs of ``ids`` after ``prompt_ids`` under this model."""
        torch = self.torch
        with self.lock, torch.no_grad():
            seq = torch.tensor([list(prompt_ids) + list(ids)])
            logp = torch.log_softmax(self.model(input_ids=seq).logits[0].float(), dim=-1)
        start = len(prompt_ids)
        return [float(logp[start - 1 + i, t]) for i, t in enumerate(ids)]


class ReplayBackend:
    """Plays a script: each session (request id) gets the outputs in order, each either text
    (tokenized, end-of-turn token appended) or a list of token ids (used as is: tests pass
    deliberately non-canonical tokenizations). Past the script's end it answers ``fallback``."""

    def __init__(self, script: list[str | list[int]], tokenizer: Any, stop_ids: set[int], *,
                 scorer: TransformersBackend | None = None, fallback: str = "I am done.") -> None:
        self.script = script
        self.tokenizer = tokenizer
        self.stop_ids = stop_ids
        self.eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
        if not isinstance(self.eos, int) or self.eos < 0:
            self.eos = tokenizer.eos_token_id
        self.scorer = scorer
        self.fallback = fallback
        self.cursor: dict[str, int] = defaultdict(int)

    async def generate(self, prompt_ids: list[int], max_tokens: int, sampling: dict[str, Any],
                       request_id: str) -> Generation:
        i = self.cursor[request_id]
        self.cursor[request_id] += 1
        step = self.script[i] if i < len(self.script) else self.fallback
        ids = list(step) if isinstance(step, list) else self.tokenizer.encode(step, add_special_tokens=False) + [self.eos]
        ids = ids[:max_tokens]
        logprobs = await asyncio.to_thread(self.scorer.score, prompt_ids, ids) if self.scorer else [0.0] * len(ids)
        return Generation(ids, logprobs, _length_stopped(ids, max_tokens, self.stop_ids))
