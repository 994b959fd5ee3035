"""Scale-out on a local Ray cluster (loopback): 2 replicas behind Ray Serve's proxy, requests
spread over both, a killed replica loses no request (client retry) and comes back."""

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

    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
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

    async def load(n: int) -> list[dict]:
        async with SandboxClient(ray_service, retries=10, backoff_s=0.2) as c:
            return await asyncio.gather(*(c.run("python", f"print({i})") for i in range(n)))

    async def main():
        task = asyncio.ensure_future(load(60))
        await asyncio.sleep(0.3)
        actors = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith("SERVE_REPLICA::coderl#")]
        victim = ray.get_actor(actors[0]["name"], namespace=actors[0]["namespace"])
        ray.kill(victim, no_restart=False)
        return await task

    results = asyncio.run(main())
    assert [r["run"]["stdout"] for r in results] == [f"{i}\n" for i in range(60)]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        status = serve.status().applications["coderl"].deployments["coderl-sandbox"]
        if status.status == "HEALTHY" and status.replica_states.get("RUNNING", 0) == 2:
            break
        time.sleep(1)
    else:
        pytest.fail("the killed replica did not come back")
