"""Scale-out on a local Ray cluster (loopback): 2 replicas behind Ray Serve's proxy, requests
spread over both, a killed replica loses no request (client retry) and comes back, and a proxy
starved of CPU (a loaded node) is waited for, as it starts and under its requests, not restarted.

The cluster is this module's own (``address="local"``): a verl run or another test's cluster on
the same machine is never joined. Every wait is bounded and says what it was waiting for."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time

import httpx
import pytest

from coderl.client import SandboxClient
from coderl.server.settings import Settings
from tests.helpers.require import require_import
from tests.helpers.service import free_port

pytestmark = pytest.mark.ray


@pytest.mark.slow  # 65 s of a frozen proxy, on purpose
@pytest.mark.timeout(600)
def test_a_proxy_slow_to_start_is_waited_for():
    """A proxy whose start takes 65 s (SIGSTOP as it starts: a loaded node) is kept by the controller
    and waited for past ``serve.start``'s own 60 s. Runs before the module's cluster starts (its
    own cluster, shut down at the end)."""
    ray = require_import("ray", "ray is not installed (the dev extras: scripts/setup.sh dev)")
    from ray import serve

    from coderl.server.ray_serve import build_app, start_serve

    ray.init(address="local", num_cpus=2, include_dashboard=False)
    frozen: list[int] = []

    def freeze_the_proxy_as_it_starts() -> None:
        deadline = time.monotonic() + 240  # the controller that starts it took over 60 s at load 10-19
        while not frozen and time.monotonic() < deadline:
            frozen.extend(pid for pid in _descendants(os.getpid()) if _cmdline(pid).startswith("ray::ProxyActor"))
            time.sleep(0.01)
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(65)
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    freezer = threading.Thread(target=freeze_the_proxy_as_it_starts)
    try:
        port = free_port()  # Ray's proxy binds its port itself: no socket to hand over
        freezer.start()
        start_serve({"host": "127.0.0.1", "port": port})
        freezer.join()
        assert len(frozen) == 1, f"expected to freeze one starting proxy, froze {frozen}"
        serve.run(build_app(Settings(slots=1, queue=32), replicas=1, cpus_per_replica=0.5), name="coderl",
                  route_prefix="/")
        _wait_for_readyz(f"http://127.0.0.1:{port}")
        assert _proxy_pid() == frozen[0], "the controller restarted the proxy"
    finally:
        if freezer.is_alive():
            freezer.join()
        serve.shutdown()
        ray.shutdown()


@pytest.fixture(scope="module")
def ray_service():
    ray = require_import("ray", "ray is not installed (the dev extras: scripts/setup.sh dev)")
    from ray import serve

    from coderl.server.ray_serve import build_app, start_serve

    ray.init(address="local", num_cpus=2, include_dashboard=False)
    port = free_port()  # Ray's proxy binds its port itself: no socket to hand over
    start_serve({"host": "127.0.0.1", "port": port})
    serve.run(build_app(Settings(slots=1, queue=32), replicas=2, cpus_per_replica=0.5), name="coderl", route_prefix="/")
    url = f"http://127.0.0.1:{port}"
    _wait_for_readyz(url)
    yield url
    serve.shutdown()
    ray.shutdown()


def test_requests_spread_over_both_replicas(ray_service):
    seen = _wait_for_answers(ray_service, lambda seen: len(seen) == 2, "answers from both replicas")
    # Each replica's slots in cgroups of its own (named by its pid): the application is made once in
    # this process and a copy unpickled in each replica, and groups named when it was made were
    # this process's, shared by both replicas (issue 49: the survivor of a kill lost its slot).
    from coderl.sandbox.cgroups import CgroupManager

    cgroups = CgroupManager()
    if cgroups.available:
        parent = cgroups.root if cgroups.support.version == "v2" else cgroups.root / "memory"
        for replica in seen:
            pid = replica.rsplit(":", 1)[1]
            assert list(parent.glob(f"coderl-{pid}-*/slot0")), \
                f"replica {replica} has no slot group of its own: {sorted(p.name for p in parent.glob('coderl-*'))}"


def _wait_for_answers(url: str, done, what: str, timeout_s: float = 180) -> set[str]:
    """Sequential requests until the replicas that answered them (``X-Coderl-Replica``: host:pid)
    satisfy ``done``. Bounded: the proxy learns of a new replica seconds after the controller reports
    it RUNNING (its routing table is pushed, not read per request), so a fixed count of requests
    races that update; on failure, says what it waited for and which replicas did answer."""
    seen: set[str] = set()
    sent = 0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        r = httpx.post(url + "/v1/run", json={"language": "python", "code": "print(1)"}, timeout=60)
        assert r.status_code == 200 and r.json()["run"]["stdout"] == "1\n", f"a bad answer: {r.status_code} {r.text[:300]}"
        seen.add(r.headers["X-Coderl-Replica"])
        sent += 1
        if done(seen):
            return seen
        time.sleep(0.05)
    pytest.fail(f"waited {timeout_s:g} s for {what}: {sent} requests were answered by {sorted(seen)}")


@pytest.mark.timeout(600)  # its own bounds (90 + 120 + 180 + 180 s on a loaded machine) say what failed
def test_killing_a_replica_loses_no_request(ray_service):
    import ray
    from ray import serve

    _wait_for_replicas(serve, 2)
    answered: dict[int, str] = {}

    async def one(client: SandboxClient, i: int) -> None:
        answered[i] = (await client.run("python", f"print({i})"))["run"]["stdout"]

    async def main() -> None:
        # Each attempt bounded by 120 s (the run's deadline, 90 s, + the grace): a request Ray Serve loses
        # is sent again within the 180 s below. The one it lost here (issue 49: its body gone with the
        # killed replica) is answered 504 by the survivor after BODY_WAIT_S and sent again.
        async with SandboxClient(ray_service, retries=10, backoff_s=0.2, timeout_s=120) as client:
            task = asyncio.gather(*(one(client, i) for i in range(60)))
            # Killed once the first answer is back: the requests are on the replicas by then (a fixed
            # 0.3 s on a loaded machine killed a replica before any request had reached it).
            deadline = time.monotonic() + 120
            while not answered and not task.done() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert answered, "no request was answered within 120 s, before any replica was killed"
            ray.kill(ray.get_actor(victim["name"], namespace=victim["namespace"]), no_restart=False)
            # Bounded: a lost request fails here, naming itself, instead of at the client's read timeout.
            done, _ = await asyncio.wait([task], timeout=180)
            if not done:
                task.cancel()
                pytest.fail(f"no answer within 180 s for requests {sorted(set(range(60)) - set(answered))}")
            task.result()

    victim = _replica_actors(ray)[0]
    before = _wait_for_answers(ray_service, lambda seen: len(seen) == 2, "answers from both replicas before the kill")
    asyncio.run(main())
    assert [answered[i] for i in range(60)] == [f"{i}\n" for i in range(60)]
    # Right after the kill the controller may still count the dead replica RUNNING (the old check
    # passed so, with one replica answering): back means a replica that is not the killed one took
    # its place and answers.
    def replaced() -> bool:
        names = {a["name"] for a in _replica_actors(ray)}
        return len(names) == 2 and victim["name"] not in names

    _wait_for_replicas(serve, 2, what="the killed replica did not come back", timeout_s=180, ready=replaced)
    # Back means answering: two replicas answer, one of them new (the killed one cannot answer; the
    # survivor was answering before the kill), waited for until the proxy routes to the newcomer.
    _wait_for_answers(ray_service, lambda seen: len(seen) == 2 and bool(seen - before),
                      f"answers from two replicas, one not among those answering before the kill {sorted(before)}")


@pytest.mark.slow  # BODY_WAIT_S (15 s) of a body that does not come, on purpose
def test_a_request_whose_body_stops_is_answered_through_the_proxy(ray_service):
    """A replica waits BODY_WAIT_S for the rest of a body, then answers 504 (which the client sends
    again) instead of holding the request until its client leaves. The kill test's lost request
    (issue 49) was one whose body the killed replica had fetched from the proxy: the survivor's
    fetch waited 180 s. Here the client sends half a body through the real proxy and waits."""
    import socket

    from coderl.server.ray_serve import BODY_WAIT_S

    host, port = ray_service.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=BODY_WAIT_S + 60) as conn:
        conn.sendall(b"POST /v1/run HTTP/1.1\r\nHost: replica\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"language\": \"python\",")
        answer = b""
        with contextlib.suppress(TimeoutError):  # an old replica held it: the assertion says so
            while b"\r\n\r\n" not in answer and (chunk := conn.recv(65536)):
                answer += chunk
    status_line = answer.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 504"), f"no 504 within {BODY_WAIT_S + 60:g} s: {answer[:300]!r}"


@pytest.mark.slow  # 70 s of a frozen proxy, on purpose
def test_a_starved_proxy_is_waited_for_not_restarted(ray_service):
    """SIGSTOP stands for a node whose CPUs others use: the proxy answers no health check for 70 s.
    Ray Serve's default checks restart it after 50-60 s, resetting its connections (measured);
    `start_serve`'s tolerate it, and the requests that waited in it are answered."""
    proxy = _proxy_pid()
    answered: dict[int, str] = {}

    async def main() -> None:
        async with SandboxClient(ray_service, retries=10, backoff_s=0.2) as client:
            async def one(i: int) -> None:
                answered[i] = (await client.run("python", f"print({i})"))["run"]["stdout"]

            os.kill(proxy, signal.SIGSTOP)
            try:
                task = asyncio.gather(*(one(i) for i in range(10)))
                await asyncio.sleep(70)
            finally:
                with contextlib.suppress(ProcessLookupError):  # restarted: the assertion below says so
                    os.kill(proxy, signal.SIGCONT)
            await asyncio.wait_for(task, 120)

    asyncio.run(main())
    assert _proxy_pid() == proxy, "the controller restarted the proxy"
    assert answered == {i: f"{i}\n" for i in range(10)}


def _wait_for_readyz(url: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=10).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the Ray Serve deployment did not answer /readyz within {timeout_s:g} s")


def _proxy_pid() -> int:
    """The pid of this module's one HTTP proxy: its cluster runs under this process (address="local")."""
    found = [pid for pid in _descendants(os.getpid()) if _cmdline(pid).startswith("ray::ProxyActor")]
    assert len(found) == 1, f"expected one Ray Serve proxy process under this one, found {found}"
    return found[0]


def _descendants(root: int) -> set[int]:
    parent = {}
    for entry in os.listdir("/proc"):
        # "pid (comm) state ppid ..."; a process that exited meanwhile is skipped
        with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{entry}/stat") as fh:
            parent[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - found
        found |= frontier
    return found


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _replica_actors(ray) -> list[dict]:
    return [a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith("SERVE_REPLICA::coderl#")]


def _wait_for_replicas(serve, n: int, *, what: str = "the deployment did not reach its replicas", timeout_s: float = 90,
                       ready=lambda: True):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = serve.status().applications["coderl"].deployments["coderl-sandbox"]
        if status.status == "HEALTHY" and status.replica_states.get("RUNNING", 0) == n and ready():
            return
        time.sleep(1)
    pytest.fail(f"{what} within {timeout_s:g} s: {status.status} {dict(status.replica_states)}")
