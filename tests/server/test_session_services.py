"""A session the service opens on a repository task whose environment declares test services
(`coderl.server.session_registry`, in process, real sandboxes): the services are started in the
session's sandbox by the grader's own starter (``grading_run.start_in_session``), on a sandbox
handed out of the warm pool as on a cold one, and the lease's commands carry their variables, as
a grading run's tests do. The local placement's episodes: tests/swe/test_test_services.py."""

from __future__ import annotations

import asyncio
import time

from coderl.sandbox.session import SessionLimits
from coderl.server.session_registry import RegistryConfig, SessionRegistry
from coderl.swe.task_set import build_task_set

PORT = 18775
SERVICE = {"name": "files", "argv": ["python", "-I", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "/tmp",
                                     str(PORT)], "port": PORT, "env": {"SERVICE_URL": f"http://127.0.0.1:{PORT}/"}}
LIMITS = SessionLimits(episode_s=120, exec_s=60)
FETCH = "python -c \"import os, urllib.request as u; print(u.urlopen(os.environ['SERVICE_URL'], timeout=60).status)\""


def test_a_leased_session_reaches_its_tasks_services_warm_or_cold(tmp_path):
    task = next(t for t in build_task_set(tmp_path) if "caesar" in t.instance_id)
    row = {**task.to_row(), "environment_setup": {"requirements": [], "services": [SERVICE]}}

    async def main():
        registry = SessionRegistry(RegistryConfig(root=tmp_path / "sessions", cache=tmp_path / "cache",
                                                  repos=tmp_path / "repos", pool_size=1))
        await registry.start()
        try:
            await registry.warm(row, LIMITS)
            deadline = time.monotonic() + 120
            while not registry.pool.ready():
                assert time.monotonic() < deadline, registry.pool.stats()
                await asyncio.sleep(0.05)
            answers = []
            for _ in range(2):  # the first from the pool, the second as the refill goes (warm or cold)
                lease = await registry.open(row, LIMITS, env={}, gateway=None, lease_s=None)
                answers.append((lease.warm, (await registry.exec(lease, FETCH, timeout_s=None, cwd=None, stdin=b"",
                                                                 env={})).stdout.split(),
                                (await registry.exec(lease, FETCH, timeout_s=None, cwd=None, stdin=b"",
                                                     env={})).stdout.split()))
                await registry.close(lease)
            return answers
        finally:
            await registry.shutdown()

    answers = asyncio.run(main())
    assert answers[0][0], answers  # handed out of the pool
    assert [a[1:] for a in answers] == [(["200"], ["200"])] * 2, answers  # from one command to the next
