"""Remote agent sessions: `coderl.sandbox.session` served over HTTP by `coderl serve`, so an
episode's sandbox can run on a sandbox node while its agent loop runs on a trainer node.

Routes (client: `coderl.client.SessionService` and its `RemoteSession`, which has the interface of
a local `Session`)::

    POST   /v1/sessions                  open    {task?, image?, harbor?, limits?, env?, gateway?, lease_s?}
                                         -> {id, token, warm, started_ms, remaining_s, lease_s, limits, workdir}
    GET    /v1/sessions                  the node's numbers: open, capacity, pool, reaped
    POST   /v1/sessions/warm             keep sandboxes of {task?, image?, limits?} ready (warm pool)
    POST   /v1/sessions/{id}/exec        {cmd, timeout_s?, cwd?, stdin_b64?, env?} -> the ExecResult
    POST   /v1/sessions/{id}/files/read  {path, max_bytes?}  -> {data_b64}     (413 over max_bytes)
    POST   /v1/sessions/{id}/files/write {path, data_b64}                      (413 over 16 MiB)
    POST   /v1/sessions/{id}/files/list  {path, max_entries?} -> {entries: [[name, is_dir]]}
    POST   /v1/sessions/{id}/edit        {op: view|create|str_replace|insert, path, ...} -> {text?}
    POST   /v1/sessions/{id}/finish      -> {diff}   (every process killed first; 400 DiffUnavailable)
    POST   /v1/sessions/{id}/grade       -> {diff, status, reward, ...}: the diff graded on its task
    POST   /v1/sessions/{id}/renew       -> {remaining_s}: the lease renewed (any request renews it)
    DELETE /v1/sessions/{id}             close

``task`` is a repository task row (as `/v1/swe/grade` takes; the snapshot and environment come from
this node's store) or absent (an empty work tree). With ``image`` (``{reference, python?, workdir?, user?}``)
the row's environment is that image; ``harbor`` (``{task, image?}``) names a Harbor task of this
node's ``CODERL_HARBOR_TASKS``: both run in the image unpacked from this node's cache, which must
already hold it (else 409 `ImageNotPulled`: `coderl images pull`; `coderl.server.image_tasks`), and
``grade`` grades from the pristine image (the Harbor task's verifier). ``exec``'s ``cwd`` defaults to
the session's work dir (``/repo``, or the image's). ``gateway`` is ``{url, credential}``: the
gateway's address as this node reaches it and the session's credential there (the gateway session
id); the sandbox reaches it at ``127.0.0.1:18001`` through `gateway_relay`. Every per-session
route needs ``Authorization: Bearer <token>`` (the token the open returned): none is 401, another
session's is 403, an unknown id 404, a closed or reaped one 410; a full node 429. Errors carry
``type`` (the `coderl.errors` class) beside ``detail``, so the client raises the same class a
local session would (`EditRejected`, `DiffUnavailable`, `SessionFailure`, ...).

A session lives on the replica that opened it: behind several replicas, send its requests to the
URL that opened it (the client does).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
from typing import Any, Literal

from fastapi import APIRouter, FastAPI, Request
from pydantic import BaseModel, ConfigDict, Field

from coderl.errors import BadRequest, TooLarge
from coderl.sandbox.session import SessionLimits
from coderl.server.image_tasks import HarborIn, ImageIn
from coderl.server.node import close_node, node_of
from coderl.server.service import service_of
from coderl.server.session_registry import SessionRegistry

router = APIRouter()
_lock = asyncio.Lock()
MAX_FILE_BYTES = 16 << 20


class LimitsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    episode_s: float = Field(default=1800.0, gt=0, le=86400)
    exec_s: float = Field(default=120.0, gt=0, le=86400)
    memory_mb: int = Field(default=2048, gt=0, le=262144)
    max_processes: int = Field(default=256, gt=0, le=16384)
    output_kb: int = Field(default=256, gt=0, le=65536)
    disk_mb: int = Field(default=1024, gt=0, le=262144)
    tmp_mb: int = Field(default=256, gt=0, le=65536)
    open_files: int = Field(default=1024, gt=0, le=65536)
    file_size_mb: int = Field(default=256, gt=0, le=65536)


class GatewayIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(pattern=r"^https?://[^/]+$", description="the gateway as this node reaches it")
    credential: str = Field(min_length=16, max_length=256, description="the session's id at the gateway")


class OpenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: dict[str, Any] | None = None
    image: ImageIn | None = None
    harbor: HarborIn | None = None
    limits: LimitsIn = LimitsIn()
    env: dict[str, str] = Field(default_factory=dict)
    gateway: GatewayIn | None = None
    lease_s: float | None = Field(default=None, gt=0, le=86400)


class WarmIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: dict[str, Any] | None = None
    image: ImageIn | None = None
    limits: LimitsIn = LimitsIn()


class ExecIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cmd: str = Field(max_length=1 << 20)
    timeout_s: float | None = Field(default=None, gt=0, le=86400)
    cwd: str | None = None  # the session's work dir
    stdin_b64: str = Field(default="", max_length=(MAX_FILE_BYTES * 4) // 3 + 4)
    env: dict[str, str] = Field(default_factory=dict)


class ReadIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    max_bytes: int = Field(default=4 << 20, gt=0, le=MAX_FILE_BYTES)


class WriteIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    data_b64: str


class ListIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = "."  # the session's work dir
    max_entries: int = Field(default=1000, gt=0, le=100000)


class EditIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    op: Literal["view", "create", "str_replace", "insert"]
    path: str
    text: str = Field(default="", max_length=MAX_FILE_BYTES)  # create / insert
    old: str = Field(default="", max_length=MAX_FILE_BYTES)  # str_replace
    new: str = Field(default="", max_length=MAX_FILE_BYTES)
    after_line: int = 0  # insert
    view_range: tuple[int, int] | None = None


async def registry_of(request: Request) -> SessionRegistry:
    """The app's session registry, started on first use (a service that never serves sessions
    mounts nothing and makes no cgroup), on the node's one host and grading (`coderl.server.node`)."""
    state = request.app.state
    node = await node_of(request.app)
    async with _lock:
        if getattr(state, "sessions", None) is None:
            registry = SessionRegistry(node.config, node.episodes)
            await registry.start()
            state.sessions = registry
    return state.sessions  # type: ignore[no-any-return]


async def shutdown(app: FastAPI) -> None:
    """Close every session of the app, then the node's host (the lifespan's end): nothing stays mounted."""
    registry = getattr(app.state, "sessions", None)
    if registry is not None:
        app.state.sessions = None
        await registry.shutdown()
    await close_node(app)


def _token(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else None


def _b64(text: str, what: str) -> bytes:
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{what} is not base64") from None
    if len(data) > MAX_FILE_BYTES:
        raise TooLarge(f"{what} is {len(data)} bytes, over the {MAX_FILE_BYTES >> 20} MiB a session file may be")
    return data


@router.post("/v1/sessions", summary="Open a remote agent session (a session sandbox on this node)")
async def open_session(body: OpenIn, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    gateway = None if body.gateway is None else (body.gateway.url, body.gateway.credential)
    lease = await registry.open(body.task, SessionLimits(**body.limits.model_dump()), env=body.env, gateway=gateway,
                                lease_s=body.lease_s, image=body.image, harbor=body.harbor)
    return {**service_of(request).meta(), **lease.describe(), "token": lease.token}


@router.get("/v1/sessions", summary="This node's sessions: open, capacity, warm pool, reaped")
async def session_stats(request: Request) -> dict[str, Any]:
    return {**service_of(request).meta(), **(await registry_of(request)).stats()}


@router.post("/v1/sessions/warm", summary="Keep sandboxes of a task ready in the warm pool")
async def warm(body: WarmIn, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    await registry.warm(body.task, SessionLimits(**body.limits.model_dump()), body.image)
    return {**service_of(request).meta(), "pool": registry.pool.stats()}


@router.post("/v1/sessions/{sid}/exec", summary="Run a shell command in the session")
async def exec_command(sid: str, body: ExecIn, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    async with registry.use(sid, _token(request)) as lease:
        result = await registry.exec(lease, body.cmd, timeout_s=body.timeout_s, cwd=body.cwd,
                                     stdin=_b64(body.stdin_b64, "stdin_b64"), env=body.env)
    return {**result.to_wire(), "stdout": result.stdout, "stderr": result.stderr}


@router.post("/v1/sessions/{sid}/files/read", summary="A file of the session")
async def read_file(sid: str, body: ReadIn, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    async with registry.use(sid, _token(request)) as lease:
        data = await lease.session.read_file(body.path, max_bytes=body.max_bytes + 1)
    if len(data) > body.max_bytes:
        raise TooLarge(f"{body.path} is larger than max_bytes={body.max_bytes}")
    return {"data_b64": base64.b64encode(data).decode()}


@router.post("/v1/sessions/{sid}/files/write", summary="Create or replace a file of the session")
async def write_file(sid: str, body: WriteIn, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    data = _b64(body.data_b64, "data_b64")
    async with registry.use(sid, _token(request)) as lease:
        await lease.session.write_file(body.path, data)
    return {"written": len(data)}


@router.post("/v1/sessions/{sid}/files/list", summary="A directory's entries")
async def list_dir(sid: str, body: ListIn, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    async with registry.use(sid, _token(request)) as lease:
        entries = await lease.session.listdir(body.path, max_entries=body.max_entries)
    return {"entries": [[name, is_dir] for name, is_dir in entries]}


@router.post("/v1/sessions/{sid}/edit", summary="The file-edit tool: view, create, str_replace, insert")
async def edit(sid: str, body: EditIn, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    async with registry.use(sid, _token(request)) as lease:
        session = lease.session
        if body.op == "view":
            return {"text": await session.view(body.path, body.view_range)}
        if body.op == "create":
            await session.create(body.path, body.text)
        elif body.op == "str_replace":
            await session.str_replace(body.path, body.old, body.new)
        else:
            await session.insert(body.path, body.after_line, body.text)
    return {}


@router.post("/v1/sessions/{sid}/finish", summary="End the episode's processes and return its diff")
async def finish(sid: str, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    async with registry.use(sid, _token(request)) as lease:
        return {"diff": await lease.session.finish()}


@router.post("/v1/sessions/{sid}/grade", summary="The session's diff graded against its task (fresh sandbox)")
async def grade(sid: str, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    async with registry.use(sid, _token(request)) as lease:
        diff, result = await registry.grade(lease)
    return {**service_of(request).meta(), **result.to_dict(), "diff": diff}


@router.post("/v1/sessions/{sid}/renew", summary="Renew the session's lease")
async def renew(sid: str, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    async with registry.use(sid, _token(request)) as lease:
        return {"remaining_s": round(lease.remaining_s, 3), "lease_s": lease.lease_s}


@router.delete("/v1/sessions/{sid}", summary="Close the session: processes, overlay, cgroup, relay")
async def close(sid: str, request: Request) -> dict[str, Any]:
    registry = await registry_of(request)
    lease = registry.get(sid, _token(request))
    await registry.close(lease)
    return {"closed": sid, "limits": dataclasses.asdict(lease.limits)}
