"""The object that owns one agent-loop worker's gateway, session host and graders: one per server
manager (every sample's loop instance shares it), and nothing left behind once it is closed or
when a dead worker process's leftovers are found (listeners, socket directory, session sandboxes,
cgroups)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.helpers.qwen_tokenizer import build_tiny_model
from tests.verl.test_agent_loop import ScriptedServer

pytestmark = pytest.mark.verl


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(build_tiny_model())


def test_one_worker_per_server_manager_and_closed_it_leaves_nothing(tokenizer, tmp_path):
    from coderl.verl.episode_worker import EpisodeWorker

    async def main():
        server, other = ScriptedServer(tokenizer, [[1]]), ScriptedServer(tokenizer, [[1]])
        worker = await EpisodeWorker.of(server, tokenizer, {}, "m")
        assert await EpisodeWorker.of(server, tokenizer, {}, "m") is worker
        # grading runs started ahead as CODERL_GRADING_WARM says (scripts/run_agent_rl.sh: 1)
        assert worker.local.grading_warm == int(os.environ.get("CODERL_GRADING_WARM") or 0)
        assert await EpisodeWorker.of(other, tokenizer, {}, "m") is not worker
        async with httpx.AsyncClient() as client:
            assert (await client.get(worker.http_url + "/v1/models")).status_code == 200
        repo = tmp_path / "repo"
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        session = await worker.host.open(repo)
        assert (await session.exec("echo hi")).stdout == "hi\n"
        await worker.aclose()
        assert session not in worker.host.sessions and not worker.socket_dir.exists()
        async with httpx.AsyncClient() as client:
            with pytest.raises(httpx.ConnectError):
                await client.get(worker.http_url + "/v1/models")
        assert await EpisodeWorker.of(server, tokenizer, {}, "m") is not worker  # a closed one is replaced
        await (await EpisodeWorker.of(server, tokenizer, {}, "m")).aclose()
        await (await EpisodeWorker.of(other, tokenizer, {}, "m")).aclose()

    asyncio.run(main())


def test_a_new_worker_removes_what_dead_workers_left(tokenizer, tmp_path):
    """verl never closes agent loops and Ray kills its actors: their socket directories go when the
    next worker starts (a directory of a running process stays)."""
    import tempfile

    from coderl.verl.episode_worker import EpisodeWorker

    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = Path(tempfile.mkdtemp(prefix=f"coderl-gateway-{dead.pid}-"))
    (stale / "gateway.sock").write_text("")
    alive = Path(tempfile.mkdtemp(prefix=f"coderl-gateway-{os.getpid()}-"))

    async def main():
        await (await EpisodeWorker.of(ScriptedServer(tokenizer, [[1]]), tokenizer, {}, "m")).aclose()

    asyncio.run(main())
    assert not stale.exists() and alive.exists()
    alive.rmdir()


def test_a_worker_listening_for_other_nodes_serves_the_agent_routes_only(tokenizer):
    """With remote sandbox nodes the gateway listens on a routable address (``gateway_listen``),
    named by this node's address; what it serves there is the agent-facing app, no admin route."""
    from coderl.verl.episode_worker import EpisodeWorker

    async def main():
        worker = await EpisodeWorker.of(ScriptedServer(tokenizer, [[1]]), tokenizer, {}, "m", "0.0.0.0:0")
        try:
            assert not worker.http_url.startswith(("http://0.0.0.0", "http://127.")), worker.http_url
            async with httpx.AsyncClient() as client:
                assert (await client.get(worker.http_url + "/v1/models")).status_code == 200
                assert (await client.post(worker.http_url + "/sessions", json={})).status_code in (404, 405)
        finally:
            await worker.aclose()

    asyncio.run(main())
