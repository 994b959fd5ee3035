"""Where responses come from: an OpenAI-compatible endpoint, vLLM offline, or a file.

Every backend answers ``await generate(items) -> list[Completion]`` for a list of
``(problem, sample_index)`` pairs. ``per_sample`` says how the evaluator should feed it: the
endpoint gets one task per sample (its own semaphore bounds what is in flight, and a long answer
never holds up a batch), vLLM and the file get batches. The multi-turn tool mode (`agent.py`)
wraps a backend's ``chat`` call: the endpoint's, or vLLM's, which gathers the turns that episodes
ask for at about the same time into one offline batch.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from coderl.errors import BadRequest, ServiceUnavailable

Item = tuple[dict[str, Any], int]  # (problem row, sample index)
Messages = list[dict[str, Any]]
Tools = list[dict[str, Any]] | None


@dataclass
class Sampling:
    n: int | None = 4  # None: as many as the --responses file holds per problem
    temperature: float = 0.6
    top_p: float = 0.95
    top_k: int | None = None
    max_tokens: int = 32768
    enable_thinking: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


class ChatBackend(Protocol):
    """What the multi-turn tool mode needs of a backend: one chat turn at a time."""

    async def chat(self, messages: Messages, *, tools: Tools = None) -> dict[str, Any]:
        """``{"message": {"content", optional "tool_calls"}, "finish_reason"}``."""


@dataclass
class Completion:
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

    async def generate(self, items: list[Item]) -> list[Completion]:
        async def one(problem: dict[str, Any]) -> Completion:
            started = time.monotonic()
            reply = await self.chat(problem["prompt"])
            return Completion(reply["message"].get("content") or "", reply["finish_reason"],
                              gen_s=round(time.monotonic() - started, 3))

        return list(await asyncio.gather(*(one(p) for p, _ in items)))

    async def chat(self, messages: Messages, *, tools: Tools = None) -> dict[str, Any]:
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
    """vLLM offline, batched. Imported lazily: vLLM is only in the trainer images (and the CPU smoke
    environment)."""

    per_sample = False
    batch_window_s = 0.05  # how long a chat turn waits for other episodes' turns to join its batch

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
        self._waiting: list[tuple[Messages, Tools, asyncio.Future]] = []  # a turn, its tools, its answer
        self._batcher: asyncio.Task | None = None

    def _chat(self, conversations: list[Messages], tools: Tools = None) -> list[Any]:
        kwargs = {**self.chat_kwargs, **({"tools": tools} if tools else {})}
        return [o.outputs[0] for o in self.llm.chat(conversations, self.params, use_tqdm=False, **kwargs)]

    async def generate(self, items: list[Item]) -> list[Completion]:
        return [Completion(o.text, o.finish_reason) for o in self._chat([p["prompt"] for p, _ in items])]

    async def chat(self, messages: Messages, *, tools: Tools = None) -> dict[str, Any]:
        """One completion, in the endpoint's shape (tool calls stay in the text, hermes-style, as
        vLLM offline has no tool parser). Episodes call this one turn at a time; the turns waiting
        together are generated as one batch, so the tool mode keeps vLLM's batching."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((messages, tools, future))
        if self._batcher is None or self._batcher.done():
            self._batcher = asyncio.create_task(self._run_waiting())
        return await future

    async def _run_waiting(self) -> None:
        while self._waiting:
            await asyncio.sleep(self.batch_window_s)
            batch, self._waiting = self._waiting, []
            by_tools: dict[str, list[tuple[Messages, Tools, asyncio.Future]]] = {}
            for entry in batch:
                by_tools.setdefault(json.dumps(entry[1], sort_keys=True), []).append(entry)
            for group in by_tools.values():
                try:
                    outputs = self._chat([m for m, _, _ in group], group[0][1])
                except Exception as exc:  # noqa: BLE001 - handed to every caller of this batch
                    for _, _, future in group:
                        future.set_exception(exc)
                    continue
                for (_, _, future), o in zip(group, outputs, strict=True):
                    future.set_result({"message": {"role": "assistant", "content": o.text},
                                       "finish_reason": o.finish_reason})

    async def aclose(self) -> None:
        pass


def _some(ids: list[str], shown: int = 3) -> str:
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


class ResponsesBackend:
    """`--responses FILE`: JSONL rows ``{"question_id", "response"}`` (one sample each, in order) or
    ``{"question_id", "responses": [...]}``. `samples_per_problem` refuses a file that does not hold
    n samples for every problem: a missing sample scored as "no code" would lower pass@k silently."""

    per_sample = False

    def __init__(self, path: str | Path) -> None:
        self.responses: dict[str, list[str]] = {}
        self.path = path
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

    def samples_per_problem(self, problems: list[dict[str, Any]], n: int | None) -> tuple[int, list[str]]:
        """The n to score (``n`` itself, or the file's count per problem when None) and the
        question_ids of the file that are not among the problems (ignored; the caller warns).
        BadRequest when no question_id matches, a problem has no responses, or fewer than n."""
        wanted = [str(p["question_id"]) for p in problems]
        unmatched = sorted(set(self.responses) - set(wanted))
        if len(unmatched) == len(self.responses):
            raise BadRequest(f"{self.path}: none of its {len(unmatched)} question_ids is among the {len(wanted)} "
                             f"problems (e.g. {_some(unmatched)} vs {_some(wanted)}): another --problems, "
                             f"date window or --limit?")
        counts = {qid: len(self.responses.get(qid, [])) for qid in wanted}
        absent = [qid for qid, c in counts.items() if c == 0]
        if absent:
            raise BadRequest(f"{self.path}: {len(absent)} of {len(wanted)} problems have no responses "
                             f"({_some(absent)}); they would score as wrong answers")
        if n is None:
            if len(set(counts.values())) > 1:
                raise BadRequest(f"{self.path}: problems have from {min(counts.values())} to {max(counts.values())} "
                                 f"responses; pass --n K to score the first K of each")
            return next(iter(counts.values())), unmatched
        short = [qid for qid, c in counts.items() if c < n]
        if short:
            raise BadRequest(f"{self.path}: {len(short)} problems have fewer than --n {n} responses "
                             f"({_some(short)}: {counts[short[0]]}); pass --n {min(counts.values())} or leave --n out")
        return n, unmatched

    async def generate(self, items: list[Item]) -> list[Completion]:
        return [Completion(self.responses[str(problem["question_id"])][i]) for problem, i in items]

    async def aclose(self) -> None:
        pass
