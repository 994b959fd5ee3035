"""Where responses come from: an OpenAI-compatible endpoint, vLLM offline, or a file.

Every backend answers ``await generate(items) -> list[Generation]`` for a list of
``(problem, sample_index)`` pairs. ``per_sample`` says how the evaluator should feed it: the
endpoint gets one task per sample (its own semaphore bounds what is in flight, and a long answer
never holds up a batch), vLLM and the file get batches. The multi-turn tool mode (`agent.py`)
wraps the endpoint's chat call.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from coderl.errors import BadRequest, ServiceUnavailable

Item = tuple[dict[str, Any], int]  # (problem row, sample index)


@dataclass
class Sampling:
    n: int = 4
    temperature: float = 0.6
    top_p: float = 0.95
    top_k: int | None = None
    max_tokens: int = 32768
    enable_thinking: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Generation:
    text: str
    finish_reason: str | None = None  # "length": cut at max_tokens
    tool_calls: int = 0
    gen_s: float | None = None  # per-sample generation time where the backend can tell


class OpenAIBackend:
    """Chat completions with a concurrency limit and retries (429, 5xx, transport errors, and a
    200 whose body is not a completion); other 4xx are our request's fault and stop the run."""

    per_sample = True

    def __init__(self, base_url: str, model: str, sampling: Sampling, *, api_key: str = "EMPTY",
                 concurrency: int = 32, retries: int = 4, timeout_s: float = 1800.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise BadRequest(f"--base-url must be an http(s):// URL, got {base_url!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.sampling = sampling
        self.headers = {"Authorization": f"Bearer {api_key}"}
        self.semaphore = asyncio.Semaphore(concurrency)
        self.retries = retries
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0),
                                      limits=httpx.Limits(max_connections=concurrency))

    async def aclose(self) -> None:
        await self.http.aclose()

    async def generate(self, items: list[Item]) -> list[Generation]:
        async def one(problem: dict[str, Any]) -> Generation:
            started = time.monotonic()
            reply = await self.chat(problem["prompt"])
            return Generation(reply["message"].get("content") or "", reply["finish_reason"],
                              gen_s=round(time.monotonic() - started, 3))

        return list(await asyncio.gather(*(one(p) for p, _ in items)))

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """One completion: ``{"message": {...content, tool_calls}, "finish_reason": ...}``."""
        s = self.sampling
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": s.temperature,
                                "top_p": s.top_p, "max_tokens": s.max_tokens, "n": 1}
        if s.top_k is not None:
            body["top_k"] = s.top_k
        if s.enable_thinking is not None:
            body["chat_template_kwargs"] = {"enable_thinking": s.enable_thinking}
        if tools:
            body["tools"] = tools
        last = ""
        for attempt in range(self.retries + 1):
            async with self.semaphore:
                try:
                    r = await self.http.post(self.url, json=body, headers=self.headers)
                except httpx.TransportError as exc:
                    last = f"{type(exc).__name__}: {exc}"
                else:
                    if r.status_code == 200:
                        try:
                            choice = r.json()["choices"][0]
                            if not isinstance(choice["message"], dict):
                                raise TypeError
                            return {"message": choice["message"], "finish_reason": choice.get("finish_reason")}
                        except (ValueError, KeyError, IndexError, TypeError):
                            last = f"malformed response: {r.text[:200]!r}"
                    elif r.status_code < 500 and r.status_code != 429:
                        raise BadRequest(f"model endpoint: HTTP {r.status_code}: {r.text[:300]}")
                    else:
                        last = f"HTTP {r.status_code}"
            if attempt < self.retries:
                await asyncio.sleep(min(10.0, 0.5 * 2 ** attempt) * random.uniform(0.5, 1.0))
        raise ServiceUnavailable(f"model endpoint {self.url} failed after {self.retries + 1} attempts: {last}")


class VLLMBackend:
    """vLLM offline on GPU/NPU, batched. Imported lazily: vLLM is only in the trainer images."""

    per_sample = False

    def __init__(self, model: str, sampling: Sampling, *, tensor_parallel_size: int = 1) -> None:
        try:
            from vllm import LLM, SamplingParams
        except ImportError:
            raise BadRequest("the vllm backend needs vLLM (in the CUDA/Ascend images); use --base-url or --responses") from None
        self.llm = LLM(model=model, tensor_parallel_size=tensor_parallel_size)
        # each (problem, sample) pair is its own prompt with n=1: batches can end anywhere (resume)
        self.params = SamplingParams(n=1, temperature=sampling.temperature, top_p=sampling.top_p,
                                     top_k=sampling.top_k or -1, max_tokens=sampling.max_tokens)
        self.chat_kwargs = ({"chat_template_kwargs": {"enable_thinking": sampling.enable_thinking}}
                            if sampling.enable_thinking is not None else {})

    async def generate(self, items: list[Item]) -> list[Generation]:
        outputs = self.llm.chat([p["prompt"] for p, _ in items], self.params, use_tqdm=False, **self.chat_kwargs)
        return [Generation(o.outputs[0].text, o.outputs[0].finish_reason) for o in outputs]

    async def aclose(self) -> None:
        pass


class ResponsesBackend:
    """`--responses FILE`: JSONL rows ``{"question_id", "response"}`` (one sample each, in order) or
    ``{"question_id", "responses": [...]}``. A missing sample is an empty response (no code)."""

    per_sample = False

    def __init__(self, path: str | Path) -> None:
        self.responses: dict[str, list[str]] = {}
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"responses file not found: {path}")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                qid = str(row["question_id"])
                texts = row["responses"] if "responses" in row else [row["response"]]
                if not isinstance(texts, list):
                    raise TypeError
            except (json.JSONDecodeError, KeyError, TypeError):
                raise BadRequest(f"{path}:{n}: expected {{question_id, response | responses: [...]}}") from None
            self.responses.setdefault(qid, []).extend(str(t) for t in texts)
        if not self.responses:
            raise BadRequest(f"{path}: no responses in it")

    async def generate(self, items: list[Item]) -> list[Generation]:
        out = []
        for problem, i in items:
            texts = self.responses.get(str(problem["question_id"]), [])
            out.append(Generation(texts[i] if i < len(texts) else ""))
        return out

    async def aclose(self) -> None:
        pass
