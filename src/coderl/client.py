"""The one HTTP client of a coderl service (one URL or several replicas): `SandboxClient`, async,
and `wait_ready`, the readiness probe. Nothing else in coderl talks HTTP to the service
(tests/test_architecture.py holds every other HTTP client to its own peer).

Used by the reward, the tool and the evaluator. Retries only what is safe and meaningful to
retry: HTTP 429/503/504, connection errors, and a 5xx that did not come from a coderl process (no
``X-Coderl-Isolation`` header: a proxy such as Ray Serve's answering for a replica that died), with jittered exponential backoff (honouring
Retry-After), moving to the next URL each time. A 4xx is the caller's mistake and raises
`BadRequest` at once; retries exhausted raise `ServiceUnavailable`.

A request that carries its own deadline (``timeout_s`` of /v1/run, /v1/judge, /v1/swe/grade: the
service answers it, with its result or a 504, within that many seconds) is lost when no answer
came ``min(DEADLINE_GRACE_S, deadline)`` after it: a proxy dropped it (Ray Serve retries a request
whose first replica died on another, whose ASGI body it can no longer deliver: issue 49), and it
is sent again. Re-sending these is safe: each is a pure function of its body (a program, tests, a
diff, each run in a fresh sandbox), and the abandoned attempt's work is cancelled when its
connection closes (`coderl.server.service.cancel_on_disconnect`; Ray Serve's proxy cancels it
too). Without a deadline given, these routes get ``timeout_s`` minus the grace, so every attempt
of them is bounded by the client's ``timeout_s``. A read timeout on any other request is not
re-sent (`ServiceError`): opening a session may still complete, and a session's commands are
not idempotent.

    async with SandboxClient("http://127.0.0.1:8080") as client:
        results = await client.judge([{"code": "print(1)", "tests": {"inputs": [""], "outputs": ["1"]}}])
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import itertools
import random
import time
from collections.abc import Callable
from typing import Any

import httpx

from coderl import api_token
from coderl.api_token import token_from
from coderl.errors import (
    BadRequest,
    CoderlError,
    ServiceError,
    ServiceUnavailable,
    UnknownSession,
    from_wire,
)

RETRY_STATUS = (429, 503, 504)
KEEPALIVE_S = 2.0
# how long past a request's own deadline the client waits before counting it lost: the proxy's
# routing, the body's transfer and the answer's, on a loaded node
DEADLINE_GRACE_S = 30.0
MAX_DEADLINE_S = 3600.0  # the largest deadline /v1/run and /v1/judge take


class SandboxClient:
    def __init__(self, urls: str | list[str], *, timeout_s: float = 300.0, retries: int = 4,
                 backoff_s: float = 0.5, max_backoff_s: float = 10.0, max_connections: int = 64,
                 coalesce_s: float = 0.002, max_batch: int = 32, token: str | None = None) -> None:
        """``token``: the operator's API token sent with every request (default: ``$CODERL_API_TOKEN``;
        `coderl.api_token`), so a service started with one takes this client's calls."""
        url_list = [urls] if isinstance(urls, str) else list(urls)
        if not url_list or not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in url_list):
            raise BadRequest(f"sandbox URL(s) must be http(s):// URLs, got {urls!r}")
        self.urls = [u.rstrip("/") for u in url_list]
        self.retries = retries
        self.timeout_s = timeout_s
        self._token = {api_token.HEADER: token} if (token := token_from() if token is None else token) else {}
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._next = itertools.cycle(range(len(self.urls)))
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0),
                                         # idle connections dropped before uvicorn's 5 s keep-alive ends
                                         # them: a request sent on one it is closing fails with a
                                         # ReadError, which a session call (never retried) cannot survive
                                         limits=httpx.Limits(max_connections=max_connections,
                                                             keepalive_expiry=KEEPALIVE_S))
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
        deadline = self._deadline(timeout_s)
        body: dict[str, Any] = {"submissions": submissions, "timeout_s": deadline}
        return (await self._request("POST", "/v1/judge", body, deadline_s=deadline))["results"]  # type: ignore[no-any-return]

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

    async def run(self, language: str, code: str, stdin: str = "", limits: dict[str, Any] | None = None, *,
                  timeout_s: float | None = None) -> dict[str, Any]:
        """POST /v1/run: one program, one stdin. ``timeout_s``: the service's deadline for it, its
        wait for a slot included (default: the client's ``timeout_s`` less the grace)."""
        deadline = self._deadline(timeout_s)
        return await self._request("POST", "/v1/run", {"language": language, "code": code, "stdin": stdin,
                                                        "limits": limits or {}, "timeout_s": deadline},
                                   deadline_s=deadline)

    async def grade_swe(self, items: list[dict[str, Any]], *, timeout_s: float | None = None) -> list[dict[str, Any]]:
        """POST /v1/swe/grade: ``items`` are ``{"task": row, "patch": diff}`` (plus ``image`` for a
        row whose environment is an image; or ``{"harbor": {task}, "patch"}``); one result each."""
        deadline = self._deadline(timeout_s)
        body: dict[str, Any] = {"items": items, "timeout_s": deadline}
        return (await self._request("POST", "/v1/swe/grade", body, deadline_s=deadline))["results"]

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
    def _deadline(self, timeout_s: float | None) -> float:
        """The service's deadline for a request: the caller's, else the client's ``timeout_s`` less
        the grace (so the attempt, deadline + grace, is bounded by ``timeout_s``)."""
        if timeout_s is not None:
            return timeout_s
        return min(MAX_DEADLINE_S, self.timeout_s - min(DEADLINE_GRACE_S, self.timeout_s / 2))

    async def _request(self, method: str, path: str, body: Any = None, *, retries: int | None = None,
                       headers: dict[str, str] | None = None, timeout_s: float | None = None,
                       deadline_s: float | None = None) -> Any:
        """``retries``: None is the client's; a session's requests pass 0 (a command is not
        idempotent, and its session lives on one replica). ``deadline_s``: the service answers
        this request within it (the body says so), so an attempt with no answer by then plus the
        grace was lost on the way and is sent again (the module's docstring says why that is
        safe); without it a read timeout raises `ServiceError`. A coderl error body's ``type`` is
        raised as that class (`errors.from_wire`): `EditRejected`, `UnknownSession`, ... as a
        local call would."""
        retries = self.retries if retries is None else retries
        if deadline_s is not None:
            timeout_s = deadline_s + min(DEADLINE_GRACE_S, deadline_s)
        last = "no attempt"
        for attempt in range(retries + 1):
            url = self.urls[next(self._next)] + path
            try:
                response = await self._client.request(method, url, json=body, headers={**self._token, **(headers or {})},
                                                      timeout=httpx.USE_CLIENT_DEFAULT if timeout_s is None
                                                      else httpx.Timeout(timeout_s, connect=10.0))
            except httpx.ReadTimeout as exc:
                if deadline_s is None:  # the server may still be working on it: sending it again doubles the load
                    raise ServiceError(f"{method} {path}: no answer within the client's timeout ({exc})") from None
                last = f"no answer within {timeout_s:g} s (its deadline {deadline_s:g} s + grace): lost on the way"
                delay = None
            except (httpx.TransportError, httpx.DecodingError) as exc:
                last = f"{type(exc).__name__}: {exc}"
                delay = None
            else:
                if response.status_code < 400:
                    return response.json()
                detail = _detail(response)
                from_proxy = "x-coderl-isolation" not in response.headers
                message = f"{method} {path}: HTTP {response.status_code}: {detail}"
                if response.status_code >= 500 and response.status_code not in RETRY_STATUS and not from_proxy:
                    raise _typed(response, message, ServiceError)
                if response.status_code < 500 and response.status_code not in RETRY_STATUS:
                    raise _typed(response, message, BadRequest)
                last = f"HTTP {response.status_code}: {detail}"
                delay = _retry_after(response)
            if attempt < retries:
                await asyncio.sleep(self._backoff(attempt, delay))
        raise ServiceUnavailable(f"{method} {path} failed after {retries + 1} attempts: {last}")

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Jittered exponential backoff, never shorter than the server's Retry-After (capped)."""
        jittered = min(self.max_backoff_s, self.backoff_s * (2 ** attempt)) * random.uniform(0.5, 1.0)
        if retry_after is not None:
            return max(jittered, min(self.max_backoff_s, retry_after))
        return jittered


def wait_ready(url: str, timeout_s: float, alive: Callable[[], bool] = lambda: True) -> str | None:
    """Poll ``url``/readyz until it answers 200 (None), ``timeout_s`` passes or ``alive()`` turns
    false (the reason, one line). The one readiness probe: `coderl health`, the scripts, the
    container entrypoint and `running_service` all wait through it. Synchronous: its callers wait
    for a process they started, before any event loop runs."""
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    while True:
        try:
            response = httpx.get(url.rstrip("/") + "/readyz", timeout=5)
            if response.status_code == 200:
                return None
            last = f"HTTP {response.status_code}: {response.text[:200]}"
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if not alive():
            return f"the service exited before it was ready ({last})"
        if time.monotonic() >= deadline:
            return f"not ready at {url} after {timeout_s:g} s ({last})"
        time.sleep(0.2)


def _typed(response: httpx.Response, message: str, default: type[CoderlError]) -> CoderlError:
    """The error class the body's ``type`` names (a class of the tree), else ``default``."""
    try:
        kind = response.json().get("type")
    except (ValueError, AttributeError):
        kind = None
    error = from_wire({"type": kind, "message": message}) if isinstance(kind, str) else None
    return error if error is not None and type(error) is not CoderlError else default(message)


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


# ---------------------------------------------------------------------- remote agent sessions
_EXEC_GRACE_S = 30.0  # on top of a command's budget before the client stops waiting for its answer


class SessionService:
    """Remote session sandboxes on one `coderl serve` (its ``/v1/sessions`` routes,
    `coderl.server.sessions`)::

        async with SessionService("http://sandbox-node:8080") as sessions:
            s = await sessions.open(task=row, limits=SessionLimits(episode_s=600),
                                    gateway=("http://trainer-node:8100", gateway_session_id))
            r = await s.exec("python -m pytest -q")     # the ExecResult a local Session returns
            diff = await s.finish()
            await s.close()

    ``open`` retries a full node (429) with backoff; every call of a session goes once to the
    replica that opened it (a command is not idempotent)."""

    def __init__(self, url: str, *, timeout_s: float = 120.0, max_connections: int = 1024) -> None:
        self.url = url.rstrip("/")
        self.client = SandboxClient(self.url, timeout_s=timeout_s, max_connections=max_connections)

    async def __aenter__(self) -> SessionService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.client.aclose()

    async def open(self, task: dict[str, Any] | None = None, *, limits: Any = None, env: dict[str, str] | None = None,
                   gateway: tuple[str, str] | None = None, lease_s: float | None = None,
                   image: dict[str, Any] | None = None, harbor: dict[str, Any] | None = None) -> RemoteSession:
        """A session over the task row's snapshot (None: an empty work tree), or in an image:
        ``image`` ``{reference, python?, workdir?, user?}`` (the row's environment) or ``harbor`` ``{task,
        image?}`` (a Harbor task of the node), from the node's cache (`ImageNotPulled` when it
        lacks the image). ``limits``: a `SessionLimits`; ``gateway``: (the gateway's URL as the
        sandbox node reaches it, the session's credential there, i.e. the gateway session id)."""
        body: dict[str, Any] = {"task": task, "env": env or {}, "lease_s": lease_s, "image": image, "harbor": harbor}
        if limits is not None:
            body["limits"] = dataclasses.asdict(limits)
        if gateway is not None:
            body["gateway"] = {"url": gateway[0], "credential": gateway[1]}
        return RemoteSession(self.client, await self.client._request("POST", "/v1/sessions", body))

    async def warm(self, task: dict[str, Any] | None = None, *, limits: Any = None,
                   image: dict[str, Any] | None = None) -> dict[str, Any]:
        """Ask the node to keep sandboxes of this task ready (its warm pool); ``image`` as for ``open``."""
        body: dict[str, Any] = {"task": task}
        if image is not None:
            body["image"] = image
        if limits is not None:
            body["limits"] = dataclasses.asdict(limits)
        return await self.client._request("POST", "/v1/sessions/warm", body)  # type: ignore[no-any-return]

    async def stats(self) -> dict[str, Any]:
        return await self.client._request("GET", "/v1/sessions")  # type: ignore[no-any-return]


class RemoteSession:
    """One remote session, with the interface of a local `coderl.sandbox.session.Session` (exec,
    read_file, write_file, listdir, view, create, str_replace, insert, finish, close), plus
    ``grade`` (its diff graded on its task, on the sandbox node) and ``renew`` (its lease; every
    call renews it). Errors are the local ones (`EditRejected`, `DiffUnavailable`, ...); a session
    gone from its node raises `UnknownSession` (404) or `SessionExpired` (410)."""

    def __init__(self, client: SandboxClient, opened: dict[str, Any]) -> None:
        from coderl.sandbox.session import SessionLimits

        self.id: str = opened["id"]
        self.workdir: str = opened["workdir"]  # where commands start: /repo, or the image's work dir
        self.warm: bool = opened["warm"]
        self.started_s: float = opened["started_ms"] / 1000
        self.limits = SessionLimits(**opened["limits"])
        self._client = client
        self._auth = {"authorization": f"Bearer {opened['token']}"}
        self._deadline = time.monotonic() + opened["remaining_s"]
        self._diff: str | None = None

    @property
    def remaining_s(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    async def _call(self, path: str, body: Any = None, *, method: str = "POST",
                    timeout_s: float | None = None) -> dict[str, Any]:
        return await self._client._request(method, f"/v1/sessions/{self.id}{path}", body,  # type: ignore[no-any-return]
                                           retries=0, headers=self._auth, timeout_s=timeout_s)

    async def exec(self, cmd: str, *, timeout_s: float | None = None, cwd: str | None = None, stdin: bytes = b"",
                   env: dict[str, str] | None = None) -> Any:
        """``bash -c cmd`` in the episode: the `ExecResult` a local session returns."""
        from coderl.sandbox.result import ExecResult

        budget = min(timeout_s or self.limits.exec_s, self.remaining_s)
        reply = await self._call("/exec", {"cmd": cmd, "timeout_s": timeout_s, "cwd": cwd,
                                           "stdin_b64": base64.b64encode(stdin).decode(), "env": env or {}},
                                 timeout_s=budget + _EXEC_GRACE_S)
        return ExecResult.from_wire(reply, stdout=reply["stdout"], stderr=reply["stderr"])

    async def read_file(self, path: str, max_bytes: int = 4 << 20) -> bytes:
        return base64.b64decode((await self._call("/files/read", {"path": path, "max_bytes": max_bytes}))["data_b64"])

    async def write_file(self, path: str, data: bytes) -> None:
        await self._call("/files/write", {"path": path, "data_b64": base64.b64encode(data).decode()})

    async def listdir(self, path: str, max_entries: int = 1000) -> list[tuple[str, bool]]:
        reply = await self._call("/files/list", {"path": path, "max_entries": max_entries})
        return [(name, bool(is_dir)) for name, is_dir in reply["entries"]]

    async def view(self, path: str, view_range: tuple[int, int] | None = None) -> str:
        body: dict[str, Any] = {"op": "view", "path": path, "view_range": list(view_range) if view_range else None}
        return str((await self._call("/edit", body))["text"])

    async def create(self, path: str, text: str) -> None:
        await self._call("/edit", {"op": "create", "path": path, "text": text})

    async def str_replace(self, path: str, old: str, new: str) -> None:
        await self._call("/edit", {"op": "str_replace", "path": path, "old": old, "new": new})

    async def insert(self, path: str, after_line: int, text: str) -> None:
        await self._call("/edit", {"op": "insert", "path": path, "after_line": after_line, "text": text})

    async def finish(self) -> str:
        """Every process of the episode killed, then its diff (idempotent)."""
        if self._diff is None:
            self._diff = str((await self._call("/finish", timeout_s=300.0))["diff"])
        return self._diff

    async def grade(self) -> dict[str, Any]:
        """The episode's diff graded against its task on the sandbox node (`/v1/swe/grade`'s
        result, plus ``diff``)."""
        return await self._call("/grade", timeout_s=3600.0)

    async def renew(self) -> float:
        """Renew the lease; the episode's remaining seconds."""
        return float((await self._call("/renew"))["remaining_s"])

    async def close(self) -> None:
        """Close it on its node. Idempotent; a session already gone (closed, reaped, its node
        lost) is not an error here: whatever is left there is reaped when its lease runs out."""
        with contextlib.suppress(UnknownSession, ServiceError):
            await self._call("", method="DELETE")

    async def __aenter__(self) -> RemoteSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
