"""The one async HTTP client for a coderl service (one URL or several replicas).

Used by the reward, the tool and the evaluator. Retries only what is safe and meaningful to
retry: HTTP 429/503/504, connection errors, and a 5xx that did not come from a coderl process (no
``X-Coderl-Isolation`` header: a proxy such as Ray Serve's answering for a replica that died), with jittered exponential backoff (honouring
Retry-After), moving to the next URL each time. A 4xx is the caller's mistake and raises
`BadRequest` at once; retries exhausted raise `ServiceUnavailable`. A read timeout is not retried
(`ServiceError`): the service may still be running that work, and sending it again doubles it.

    async with SandboxClient("http://127.0.0.1:8080") as client:
        results = await client.judge([{"code": "print(1)", "tests": {"inputs": [""], "outputs": ["1"]}}])
"""

from __future__ import annotations

import asyncio
import itertools
import random
from typing import Any

import httpx

from coderl.errors import BadRequest, ServiceError, ServiceUnavailable

RETRY_STATUS = (429, 503, 504)


class SandboxClient:
    def __init__(self, urls: str | list[str], *, timeout_s: float = 300.0, retries: int = 4,
                 backoff_s: float = 0.5, max_backoff_s: float = 10.0, max_connections: int = 64,
                 coalesce_s: float = 0.002, max_batch: int = 32) -> None:
        url_list = [urls] if isinstance(urls, str) else list(urls)
        if not url_list or not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in url_list):
            raise BadRequest(f"sandbox URL(s) must be http(s):// URLs, got {urls!r}")
        self.urls = [u.rstrip("/") for u in url_list]
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._next = itertools.cycle(range(len(self.urls)))
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0),
                                         limits=httpx.Limits(max_connections=max_connections))
        self.coalesce_s = coalesce_s
        self.max_batch = max_batch
        self._pending: list[tuple[dict[str, Any], asyncio.Future[dict[str, Any]]]] = []
        self._flush_timer: asyncio.TimerHandle | None = None
        self._in_flight: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> SandboxClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._flush()
        if self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)
        await self._client.aclose()

    # ------------------------------------------------------------------ API
    async def judge(self, submissions: list[dict[str, Any]], *, timeout_s: float | None = None) -> list[dict[str, Any]]:
        """POST /v1/judge; one result dict per submission (``error`` set where it could not run)."""
        body: dict[str, Any] = {"submissions": submissions}
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        return (await self._request("POST", "/v1/judge", body))["results"]  # type: ignore[no-any-return]

    async def judge_one(self, submission: dict[str, Any]) -> dict[str, Any]:
        """One submission's result. Submissions asked for within ``coalesce_s`` of each other (up to
        ``max_batch``) travel in one /v1/judge request: a reward worker scoring a step's samples
        concurrently pays a few HTTP round trips instead of one per sample (measured:
        benchmarks/bench_reward.py). A request that fails raises in every caller it carried."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._pending.append((submission, future))
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._flush_timer is None:
            self._flush_timer = loop.call_later(self.coalesce_s, self._flush)
        return await future

    def _flush(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        batch, self._pending = self._pending, []
        if batch:
            task = asyncio.ensure_future(self._send_batch(batch))
            self._in_flight.add(task)  # a reference, so the task is not collected mid-flight
            task.add_done_callback(self._in_flight.discard)

    async def _send_batch(self, batch: list[tuple[dict[str, Any], asyncio.Future[dict[str, Any]]]]) -> None:
        try:
            results = await self.judge([sub for sub, _ in batch])
        except asyncio.CancelledError:
            for _, future in batch:
                future.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - delivered to every caller of the batch
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():  # a caller that gave up (cancelled) is skipped
                future.set_result(result)

    async def run(self, language: str, code: str, stdin: str = "", limits: dict[str, Any] | None = None) -> dict[str, Any]:
        """POST /v1/run: one program, one stdin."""
        return await self._request("POST", "/v1/run", {"language": language, "code": code, "stdin": stdin,
                                                        "limits": limits or {}})

    async def grade_swe(self, items: list[dict[str, Any]], *, timeout_s: float | None = None) -> list[dict[str, Any]]:
        """POST /v1/swe/grade: ``items`` are ``{"task": row, "patch": diff}``; one result each."""
        body: dict[str, Any] = {"items": items}
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        return (await self._request("POST", "/v1/swe/grade", body))["results"]

    async def capabilities(self) -> dict[str, Any]:
        return await self._request("GET", "/v1/capabilities")

    async def health(self) -> bool:
        """True when some replica answers /readyz positively (no retries)."""
        for url in self.urls:
            try:
                response = await self._client.get(url + "/readyz", timeout=30.0)
                if response.status_code == 200:
                    return True
            except httpx.HTTPError:
                continue
        return False

    # ------------------------------------------------------------------ transport
    async def _request(self, method: str, path: str, body: Any = None) -> Any:
        last = "no attempt"
        for attempt in range(self.retries + 1):
            url = self.urls[next(self._next)] + path
            try:
                response = await self._client.request(method, url, json=body)
            except httpx.ReadTimeout as exc:  # the server may still be working on it: sending it again doubles the load
                raise ServiceError(f"{method} {path}: no answer within the client's timeout ({exc})") from None
            except (httpx.TransportError, httpx.DecodingError) as exc:
                last = f"{type(exc).__name__}: {exc}"
                delay = None
            else:
                if response.status_code < 400:
                    return response.json()
                detail = _detail(response)
                from_proxy = "x-coderl-isolation" not in response.headers
                if response.status_code >= 500 and response.status_code not in RETRY_STATUS and not from_proxy:
                    raise ServiceError(f"{method} {path}: HTTP {response.status_code}: {detail}")
                if response.status_code < 500 and response.status_code not in RETRY_STATUS:
                    raise BadRequest(f"{method} {path}: HTTP {response.status_code}: {detail}")
                last = f"HTTP {response.status_code}: {detail}"
                delay = _retry_after(response)
            if attempt < self.retries:
                await asyncio.sleep(self._backoff(attempt, delay))
        raise ServiceUnavailable(f"{method} {path} failed after {self.retries + 1} attempts: {last}")

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Jittered exponential backoff, never shorter than the server's Retry-After (capped)."""
        jittered = min(self.max_backoff_s, self.backoff_s * (2 ** attempt)) * random.uniform(0.5, 1.0)
        if retry_after is not None:
            return max(jittered, min(self.max_backoff_s, retry_after))
        return jittered


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", response.text))[:500]
    except (ValueError, AttributeError):
        return response.text[:500]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
