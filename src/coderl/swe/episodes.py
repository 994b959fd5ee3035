"""Episodes and their grading, for every task kind (`coderl.swe.task_ref`), in one of two placements
chosen once by the caller: ``LocalEpisodes`` (this process's session host) or ``RemoteEpisodes`` (a
session service on the sandbox nodes, through `coderl.client`).

The interface (``Episodes``):

- ``open(ref, ...)``: a session on the task (its snapshot, its image or the Harbor task's image, or an
  empty work tree), whose one way out is the gateway;
- ``run_harness(ref, template, ...)``: an agent harness's episode in such a session
  (`coderl.swe.harness`): a `HarnessResult` with the episode's diff (and, for a local Harbor task,
  the container it left);
- ``grade(ref, diff, state)``: the diff graded in a fresh sandbox from the pristine snapshot or
  image (a Harbor task's verifier on the container the episode left, when given): one `GradeResult`
  for every kind. A reference that cannot be read or served (a row without a task, an image the
  node lacks) is a ``sandbox_error`` result, never an exception: the data's or our fault, never the
  agent's.

Which kind does what lives here and in `task_ref` only: a fifth kind adds a branch to each method of
both placements and a reader/writer pair in `task_ref` (docs/task-kinds.md).

A local placement has ONE bound on its grading sandboxes (``concurrency``), shared by every grader
it makes (snapshot, image, Harbor), however many cache or repository directories the rows name.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coderl.cache import default_cache_dir
from coderl.errors import BadRequest, ImageNotPulled, ImageUnavailable, InvalidTask, SandboxError
from coderl.sandbox.image_rootfs import ImageRoot
from coderl.sandbox.session import EpisodeState, Session, SessionHost, SessionLimits
from coderl.swe.grade_status import GradeResult
from coderl.swe.grader import RepoGrader
from coderl.swe.grading_run import service_env, services_binds, start_in_session
from coderl.swe.harbor_grader import HarborRunner
from coderl.swe.harness import SANDBOX_PORT, HarnessResult, run_in_remote_sandbox, run_in_session
from coderl.swe.image_grader import DEFAULT_PYTHON, ImageRepoGrader
from coderl.swe.store import RepoStore, git
from coderl.swe.task_ref import EMPTY, HARBOR, IMAGE, SNAPSHOT, TaskRef

LOCAL, REMOTE = "local", "remote"


def grading_warm_setting(environ: Mapping[str, str], default: int) -> int:
    """``CODERL_GRADING_WARM`` (grading runs started ahead per repository task, ``RepoGrader(warm=...)``)
    from ``environ``, else ``default``. ValueError for anything but a whole number >= 0."""
    value = environ.get("CODERL_GRADING_WARM", "").strip()
    if not value:
        return default
    if not value.isdigit():
        raise ValueError(f"CODERL_GRADING_WARM={value!r}: a whole number of grading runs per task (0 = off)")
    return int(value)


def episode_limits(timeout_s: float) -> SessionLimits:
    return SessionLimits(episode_s=timeout_s + 30, exec_s=timeout_s)


class Episodes:
    """What runs and grades episodes; ``placement`` is ``local`` or ``remote``."""

    placement = ""

    async def open(self, ref: TaskRef, *, env: dict[str, str], limits: SessionLimits, **where: Any) -> Any:
        raise NotImplementedError

    async def run_harness(self, ref: TaskRef, template: str, *, task: str, session_id: str, model: str,
                          timeout_s: float | None, env: dict[str, str] | None = None,
                          harness_binds: tuple[str, ...] = ()) -> HarnessResult:
        raise NotImplementedError

    async def grade(self, ref: TaskRef, diff: str | None, state: EpisodeState | None = None) -> GradeResult:
        raise NotImplementedError

    def expect(self, ref: TaskRef) -> None:
        """A grading of ``ref`` is coming (its episode ended): where a grader can start its run
        ahead, it starts it now, in the background (``RepoGrader.expect``)."""
        return None

    async def aclose(self) -> None:
        return None


class LocalEpisodes(Episodes):
    """Episodes and grading on this process's session host. ``repos`` / ``cache``: where a
    snapshot task's mirrors and every build live when the reference names none (a service node's
    ``CODERL_SWE_REPOS`` and ``CODERL_CACHE``); ``fetch``: pull or build an image this machine lacks
    (False on a service node, which answers `ImageNotPulled`: `coderl images pull` is the
    operator's step); ``harbor_dir``: the Harbor tasks a request may name (``CODERL_HARBOR_TASKS``);
    ``gateway_socket``: the gateway's unix socket ``run_harness`` relays to; ``grading_warm``: the
    repository graders' runs started ahead per task (``RepoGrader(warm=...)``, ``CODERL_GRADING_WARM``)."""

    placement = LOCAL

    def __init__(self, host: SessionHost, *, repos: Path | None = None, cache: Path | None = None,
                 find_links: Path | None = None, concurrency: int = 2, fetch: bool = True,
                 harbor_dir: Path | None = None, gateway_socket: str = "", grading_warm: int = 0) -> None:
        self.host, self.repos, self.cache = host, repos, cache or default_cache_dir()
        self.grading_warm = grading_warm
        self.find_links, self.fetch, self.harbor_dir = find_links, fetch, harbor_dir
        self.gateway_socket = gateway_socket
        self.gate = asyncio.Semaphore(concurrency)  # the one bound on this placement's grading sandboxes
        self._repo_graders: dict[tuple[str, str], RepoGrader] = {}
        self._image_graders: dict[Path, ImageRepoGrader] = {}
        self._runners: dict[Path, HarborRunner] = {}
        self._roots: dict[tuple[str, Path], ImageRoot] = {}
        self._prepared: dict[tuple[Any, ...], tuple[Path, Path | None]] = {}
        self._empty: Path | None = None

    # ------------------------------------------------------------------ what each kind needs
    def _cache_of(self, ref: TaskRef) -> Path:
        return Path(ref.cache_dir) if ref.cache_dir else self.cache

    async def aclose(self) -> None:
        """The repository graders' runs started ahead stopped (``grading_warm``); before the host closes."""
        await asyncio.gather(*(grader.aclose() for grader in self._repo_graders.values()))

    def repo_grader(self, ref: TaskRef) -> RepoGrader:
        repos = ref.repos_dir or (str(self.repos) if self.repos else "")
        if not repos:
            raise BadRequest("this service opens no repository tasks: start it with CODERL_SWE_REPOS set to a "
                             "directory of git mirrors or tarballs")
        key = (repos, str(self._cache_of(ref)))
        if key not in self._repo_graders:
            cache = self._cache_of(ref)
            self._repo_graders[key] = RepoGrader(self.host, RepoStore(Path(repos), cache), env_cache=cache,
                                                 find_links=self.find_links, gate=self.gate, warm=self.grading_warm)
        return self._repo_graders[key]

    def image_grader(self, ref: TaskRef) -> ImageRepoGrader:
        cache = self._cache_of(ref)
        if cache not in self._image_graders:
            self._image_graders[cache] = ImageRepoGrader(self.host, cache, pull=self.fetch, gate=self.gate)
        return self._image_graders[cache]

    def runner(self, ref: TaskRef) -> HarborRunner:
        cache = self._cache_of(ref)
        if cache not in self._runners:
            self._runners[cache] = HarborRunner(self.host, cache, fetch=self.fetch, gate=self.gate)
        return self._runners[cache]

    async def prepare(self, ref: TaskRef) -> tuple[Path, Path | None]:
        """A snapshot task's snapshot and environment (the row's, else built once here); an empty
        work tree for ``empty``."""
        if ref.kind == EMPTY:
            if ref.repo_dir:
                return Path(ref.repo_dir), None
            if self._empty is None:
                self._empty = await asyncio.to_thread(_empty_repo, Path(tempfile.mkdtemp(prefix="coderl-empty-")) / "repo")
            return self._empty, None
        assert ref.kind == SNAPSHOT and ref.task is not None
        if ref.repo_dir:
            return Path(ref.repo_dir), Path(ref.env_dir) if ref.env_dir else None
        task = ref.task
        key = (ref.repos_dir, ref.cache_dir, task.repo, task.base_commit, task.env, task.env.trusted)
        if key not in self._prepared:
            self._prepared[key] = await self.repo_grader(ref).prepare(task)
        return self._prepared[key]

    async def image_root(self, ref: TaskRef) -> ImageRoot:
        """An image task's unpacked image, resolved once per process (so a session and the grading
        of its diff use the same image even if a tag moves): pulled or built when ``fetch``, else
        from this node's cache or engine (`ImageNotPulled` naming what to run)."""
        from coderl.sandbox.image_build import BUILT_REPOSITORY, obtained
        from coderl.sandbox.image_rootfs import unpacked

        assert ref.image is not None
        cache, reference = self._cache_of(ref), ref.image.reference
        if (reference, cache) not in self._roots:
            if self.fetch:
                root = await asyncio.to_thread(obtained, reference, cache)
            else:
                try:
                    root = await asyncio.to_thread(unpacked, reference, cache)
                except ImageNotPulled as exc:
                    if not reference.startswith(BUILT_REPOSITORY + "/"):
                        raise
                    raise ImageNotPulled(f"image {reference} is built from a row's Dockerfile and is not on this "
                                         f"node: build it here with `coderl images pull DOCKERFILE` (the row's image, "
                                         f"a Dockerfile or its build context; --ray on every sandbox node)") from exc
            self._roots[(reference, cache)] = root
        return self._roots[(reference, cache)]

    async def image_of(self, ref: TaskRef) -> ImageRoot:
        """``image_root`` with the row's user checked against the image (`InvalidTask`: the row's
        fault, not the node's: a 400, never retried elsewhere)."""
        assert ref.image is not None
        root = await self.image_root(ref)
        try:
            root.identity(ref.image.user or None)
        except ImageUnavailable as exc:
            raise InvalidTask(f"the task's user: {exc}") from None
        return root

    # ------------------------------------------------------------------ the interface
    async def open(self, ref: TaskRef, *, env: dict[str, str], limits: SessionLimits, ro_binds: tuple[str, ...] = (),
                   gateway_socket: str | None = None, gateway_port: int = SANDBOX_PORT, **_: Any) -> Session:
        """A session on the task, relayed to ``gateway_socket`` (default: this placement's)."""
        socket = gateway_socket or self.gateway_socket or None
        port = gateway_port if socket else None  # no gateway: a session with no way out at all
        if ref.kind == HARBOR:
            harbor = ref.harbor_task()
            limits = dataclasses.replace(limits, memory_mb=harbor.memory_mb or limits.memory_mb,
                                         disk_mb=harbor.storage_mb or limits.disk_mb)
            return await self.runner(ref).open_episode(harbor, env=env, ro_binds=ro_binds, gateway_socket=socket,
                                                       gateway_port=port, limits=limits)
        if ref.kind == IMAGE:
            assert ref.image is not None
            root = await self.image_of(ref)
            return await self.host.open_image(root, workdir=ref.image.workdir or None, user=ref.image.user or None,
                                              limits=limits, ro_binds=ro_binds, gateway_socket=socket,
                                              gateway_port=port, env=env)
        snapshot, env_dir = await self.prepare(ref)
        services = ref.task.env.services if ref.task is not None and env_dir is not None else ()
        if services:  # the environment's test services, started as its grading starts them
            ro_binds, env = (*ro_binds, *services_binds(ref.task)), {**service_env(services, env_dir), **env}
        session = await self.host.open(snapshot, limits=limits, env_dir=env_dir, ro_binds=ro_binds,
                                       gateway_socket=socket, gateway_port=port, env=env)
        if services:
            try:
                await start_in_session(session, services, env_dir)
            except BaseException:
                await session.close()
                raise
        return session

    async def run_harness(self, ref: TaskRef, template: str, *, task: str, session_id: str, model: str,
                          timeout_s: float | None, env: dict[str, str] | None = None,
                          harness_binds: tuple[str, ...] = ()) -> HarnessResult:
        if ref.kind == HARBOR:  # the task's own budget, user and environment; its container kept for the verifier
            return await self.runner(ref).run_agent(ref.harbor_task(), template, gateway_socket=self.gateway_socket,
                                                    session_id=session_id, model=model, timeout_s=timeout_s,
                                                    harness_binds=harness_binds, env=env)

        budget = float(timeout_s or 600.0)

        async def open_session(harness_env: dict[str, str]) -> Session:
            return await self.open(ref, env={**harness_env, **(env or {})}, limits=episode_limits(budget),
                                   ro_binds=harness_binds)

        return await run_in_session(template, open_session=open_session, task=task, workdir="", session_id=session_id,
                                    model=model, timeout_s=budget, capture_diff=True, ended=lambda: self.expect(ref))

    def expect(self, ref: TaskRef) -> None:
        if ref.kind == SNAPSHOT and ref.task is not None and self.grading_warm:
            with contextlib.suppress(BadRequest):  # no repositories here: its grading says so
                self.repo_grader(ref).expect(ref.task)

    async def grade(self, ref: TaskRef, diff: str | None, state: EpisodeState | None = None) -> GradeResult:
        try:
            if ref.kind == HARBOR:
                return await self.runner(ref).grade(ref.harbor_task(), diff or "", state)
            if state is not None:
                state.remove()
            if ref.kind == IMAGE:
                assert ref.task is not None and ref.image is not None
                image = ref.image.reference if self.fetch else (await self.image_root(ref)).image_id
                return await self.image_grader(ref).grade(ref.task, image, diff or "",
                                                          python=ref.image.python or DEFAULT_PYTHON,
                                                          workdir=ref.image.workdir or None,
                                                          user=ref.image.user or None)
            if ref.kind == SNAPSHOT:
                assert ref.task is not None
                return await self.repo_grader(ref).grade(ref.task, diff or "")
        except (InvalidTask, SandboxError) as exc:  # the row's or this node's: never the agent's
            if state is not None:
                state.remove()
            return GradeResult.sandbox_error(ref.instance_id, str(exc))
        return GradeResult.sandbox_error(ref.instance_id, "the episode has no task: there is nothing to grade against")


class RemoteEpisodes(Episodes):
    """Episodes on a session service (``sessions``: a `coderl.client.SessionService` or a replica
    list with its ``open``) and grading by its ``/v1/swe/grade`` (``client``: a
    `coderl.client.SandboxClient`); the node reaches the gateway at ``gateway_url``. The node holds
    the repositories, images and Harbor tasks a reference names (`TaskRef.to_request`)."""

    placement = REMOTE

    def __init__(self, sessions: Any, client: Any, *, gateway_url: str = "") -> None:
        self.sessions, self.client, self.gateway_url = sessions, client, gateway_url

    async def open(self, ref: TaskRef, *, env: dict[str, str], limits: SessionLimits,
                   gateway: tuple[str, str] | None = None, **_: Any) -> Any:
        named = ref.to_request()
        return await self.sessions.open(named.get("task"), image=named.get("image"), harbor=named.get("harbor"),
                                        limits=limits, env=env, gateway=gateway)

    async def run_harness(self, ref: TaskRef, template: str, *, task: str, session_id: str, model: str,
                          timeout_s: float | None, env: dict[str, str] | None = None,
                          harness_binds: tuple[str, ...] = ()) -> HarnessResult:
        """``harness_binds`` are the node's (``CODERL_SESSION_BINDS``): a request names no host path."""
        named = ref.to_request()
        return await run_in_remote_sandbox(template, sessions=self.sessions, task_row=named.get("task"),
                                           image=named.get("image"), harbor=named.get("harbor"), task=task,
                                           gateway_url=self.gateway_url, session_id=session_id, model=model,
                                           timeout_s=float(timeout_s or 600.0), env=env, capture_diff=True)

    async def grade(self, ref: TaskRef, diff: str | None, state: EpisodeState | None = None) -> GradeResult:
        if state is not None:
            state.remove()
        if ref.kind == EMPTY:
            return GradeResult.sandbox_error(ref.instance_id, "the episode has no task: there is nothing to grade against")
        try:
            named = ref.to_request()
        except (InvalidTask, ImageUnavailable) as exc:  # e.g. a Dockerfile this machine lacks
            return GradeResult.sandbox_error(ref.instance_id, f"the row carries no readable task: {exc}")
        (out,) = await self.client.grade_swe([{**named, "patch": diff or ""}])
        if "error" in out:
            return GradeResult.sandbox_error(ref.instance_id, str(out["error"]))
        return GradeResult.from_dict(out)

    async def aclose(self) -> None:
        for held in (self.sessions, self.client):
            if held is not None:
                await held.aclose()


def _empty_repo(path: Path) -> Path:
    """An empty work tree with one commit, for an episode without a task (a code problem)."""
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", str(path))
    (path / ".gitkeep").write_text("")
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "empty", cwd=path)
    return path
