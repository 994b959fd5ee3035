"""Where responses come from: an OpenAI-compatible endpoint, vLLM offline, or a file.

All three give `generate(prompts, n) -> list[list[Response]]`. The optional multi-turn mode (the
`code_interpreter` tool through the sandbox, as in training) runs in `agent.py` on top of the
OpenAI backend's chat call.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from coderl.errors import BadRequest, ServiceUnavailable


@dataclass
class Sampling:
    n: int = 4
    temperature: float = 0.6
    top_p: float = 0.95
    top_k: int | None = None
    max_tokens: int = 32768
    enable_thinking: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


class OpenAIBackend:
    """Chat completions with a concurrency limit and retries (429/5xx/transport errors)."""

    def __init__(self, base_url: str, model: str, *, api_key: str = "EMPTY", concurrency: int = 32,
                 retries: int = 4, timeout_s: float = 1800.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.headers = {"Authorization": f"Bearer {api_key}"}
        self.semaphore = asyncio.Semaphore(concurrency)
        self.retries = retries
        self.timeout_s = timeout_s

    async def chat(self, client: httpx.AsyncClient, messages: list[dict[str, Any]], sampling: Sampling, *,
                   tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """One completion; returns the assistant message (content, tool_calls) and finish reason."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": sampling.temperature,
                                "top_p": sampling.top_p, "max_tokens": sampling.max_tokens, "n": 1}
        if sampling.top_k is not None:
            body["top_k"] = sampling.top_k
        if sampling.enable_thinking is not None:
            body["chat_template_kwargs"] = {"enable_thinking": sampling.enable_thinking}
        if tools:
            body["tools"] = tools
        last = ""
        for attempt in range(self.retries + 1):
            async with self.semaphore:
                try:
                    r = await client.post(self.url, json=body, headers=self.headers, timeout=self.timeout_s)
                except httpx.TransportError as exc:
                    last = f"{type(exc).__name__}: {exc}"
                else:
                    if r.status_code == 200:
                        try:
                            choice = r.json()["choices"][0]
                            return {"message": choice["message"], "finish_reason": choice.get("finish_reason")}
                        except (ValueError, KeyError, IndexError, TypeError):
                            last = f"malformed response: {r.text[:200]}"
                    elif r.status_code < 500 and r.status_code != 429:
                        raise BadRequest(f"model endpoint: HTTP {r.status_code}: {r.text[:300]}")
                    else:
                        last = f"HTTP {r.status_code}"
            if attempt < self.retries:
                await asyncio.sleep(min(10.0, 0.5 * 2 ** attempt) * random.uniform(0.5, 1.0))
        raise ServiceUnavailable(f"model endpoint failed after {self.retries + 1} attempts: {last}")


class VLLMBackend:
    """vLLM offline on GPU/NPU (batched). Imported lazily: it is only in the trainer images."""

    def __init__(self, model: str, *, tensor_parallel_size: int = 1, max_model_len: int | None = None) -> None:
        try:
            from vllm import LLM
        except ImportError as exc:
            raise BadRequest("the vllm backend needs vLLM (in the CUDA/Ascend images); use --base-url or --responses") from exc
        self.llm = LLM(model=model, tensor_parallel_size=tensor_parallel_size, max_model_len=max_model_len)

    def generate(self, prompts: list[list[dict[str, Any]]], sampling: Sampling) -> list[list[str]]:
        from vllm import SamplingParams

        params = SamplingParams(n=sampling.n, temperature=sampling.temperature, top_p=sampling.top_p,
                                top_k=sampling.top_k or -1, max_tokens=sampling.max_tokens)
        kwargs = {"chat_template_kwargs": {"enable_thinking": sampling.enable_thinking}} \
            if sampling.enable_thinking is not None else {}
        outputs = self.llm.chat(prompts, params, **kwargs)
        return [[o.text for o in out.outputs] for out in outputs]


def read_responses(path: str | Path) -> dict[str, list[str]]:
    """`--responses FILE`: JSONL rows ``{"question_id": ..., "response": ...}`` (or ``responses: [...]``)."""
    out: dict[str, list[str]] = {}
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"responses file not found: {path}")
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            qid = str(row["question_id"])
            responses = row["responses"] if "responses" in row else [row["response"]]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise BadRequest(f"{path}:{n}: expected {{question_id, response|responses}} ({type(exc).__name__})") from None
        out.setdefault(qid, []).extend(str(r) for r in responses)
    return out
