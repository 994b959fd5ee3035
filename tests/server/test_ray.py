"""Scale-out on a local Ray cluster (loopback): 2 replicas behind Ray Serve's proxy, requests
spread over both, a killed replica loses no request (client retry) and comes back.

The cluster is this module's own (``address="local"``): a verl run or another test's cluster on
the same machine is never joined. Every wait is bounded and says what it was waiting for."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from coderl.client import SandboxClient
from coderl.server.settings import Settings
from tests.helpers.service import free_port

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_service():
    ray = pytest.importorskip("ray")
    from ray import serve

    from coderl.server.ray_serve import build_app

    ray.init(address="local", num_cpus=2, include_dashboard=False)
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(build_app(Settings(slots=1, queue=32), replicas=2, cpus_per_replica=0.5), name="coderl", route_prefix="/")
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=10).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    else:
        pytest.fail("the Ray Serve deployment did not answer /readyz within 120 s")
    yield url
    serve.shutdown()
    ray.shutdown()


def test_requests_spread_over_both_replicas(ray_service):
    replicas = set()
    for _ in range(40):
        r = httpx.post(ray_service + "/v1/run", json={"language": "python", "code": "print(1)"}, timeout=60)
        assert r.json()["run"]["stdout"] == "1\n"
        replicas.add(r.headers["X-Coderl-Replica"])
    assert len(replicas) == 2


def test_killing_a_replica_loses_no_request(ray_service):
    import ray
    from ray import serve

    _wait_for_replicas(serve, 2)
    answered: dict[int, str] = {}

    async def one(client: SandboxClient, i: int) -> None:
        answered[i] = (await client.run("python", f"print({i})"))["run"]["stdout"]

    async def main() -> None:
        async with SandboxClient(ray_service, retries=10, backoff_s=0.2) as client:
            task = asyncio.gather(*(one(client, i) for i in range(60)))
            await asyncio.sleep(0.3)
            actors = [a for a in ray.util.list_named_actors(all_namespaces=True)
                      if a["name"].startswith("SERVE_REPLICA::coderl#")]
            ray.kill(ray.get_actor(actors[0]["name"], namespace=actors[0]["namespace"]), no_restart=False)
            # Bounded: a lost request fails here, naming itself, instead of at the client's read timeout.
            done, _ = await asyncio.wait([task], timeout=180)
            if not done:
                task.cancel()
                pytest.fail(f"no answer within 180 s for requests {sorted(set(range(60)) - set(answered))}")
            task.result()

    asyncio.run(main())
    assert [answered[i] for i in range(60)] == [f"{i}\n" for i in range(60)]
    _wait_for_replicas(serve, 2, what="the killed replica did not come back")


def _wait_for_replicas(serve, n: int, *, what: str = "the deployment did not reach its replicas", timeout_s: float = 90):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = serve.status().applications["coderl"].deployments["coderl-sandbox"]
        if status.status == "HEALTHY" and status.replica_states.get("RUNNING", 0) == n:
            return
        time.sleep(1)
    pytest.fail(f"{what} within {timeout_s:g} s: {status.status} {dict(status.replica_states)}")
