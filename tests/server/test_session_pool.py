"""The session service's warm pool (`coderl.server.session_pool`, in process: the registry the
service runs, real sandboxes): a sandbox handed out of the pool is a fresh one. The first episode
handed out writes into its work tree, /tmp, its home and the repository's git config, starts a
process and kills what it can; the next one handed out from the refilled pool sees none of
it and answers a probe exactly as a sandbox opened cold on the same key does (files, processes,
environment, user, limits). The image task's pool is shown on a real image in
tests/server/test_sessions_remote_images.py (slow: the image is built there)."""

from __future__ import annotations

import asyncio
import time

from coderl.sandbox.session import SessionLimits
from coderl.server.session_pool import PoolKey
from coderl.server.session_registry import HORIZON_S, RegistryConfig, SessionRegistry
from coderl.swe.task_ref import EMPTY, TaskRef

LIMITS = SessionLimits(episode_s=120, exec_s=30, memory_mb=512, max_processes=64, output_kb=64, disk_mb=64)
PROBE = ("echo \"mark=$MARK\"; id -u; pwd; ls -a /repo /tmp \"$HOME\"; git -C /repo status --porcelain; "
         "cat /repo/.git/config; grep -l '[z]zsleeper' /proc/[0-9]*/cmdline 2>/dev/null | wc -l; "
         "env | grep -v '^MARK=' | sort; ulimit -u -n -f")
MESS = ("echo planted > /repo/planted; echo planted > /tmp/planted; echo planted > \"$HOME/planted\"; "
        "git -C /repo config user.name planted; mkdir -p /repo/.git/hooks; echo x > /repo/.git/hooks/pre-commit; "
        "(exec -a \"z\"\"zsleeper\" sleep 300 &) ; export LEFT=1; sleep 0.2; grep -l '[z]zsleeper' /proc/[0-9]*/cmdline | wc -l")


async def _ready(registry: SessionRegistry, key: PoolKey, n: int) -> None:
    deadline = time.monotonic() + 120
    while registry.pool.ready(key) < n:
        assert time.monotonic() < deadline, f"the pool did not refill: {registry.pool.stats()}"
        await asyncio.sleep(0.05)


async def _exec(registry: SessionRegistry, lease, cmd: str):  # type: ignore[no-untyped-def]
    return await registry.exec(lease, cmd, timeout_s=None, cwd=None, stdin=b"", env={})


def test_a_pooled_sandbox_holds_nothing_an_earlier_episode_did(tmp_path):
    async def main() -> None:
        registry = SessionRegistry(RegistryConfig(root=tmp_path / "sessions", cache=tmp_path / "cache", pool_size=1))
        await registry.start()
        try:
            await registry.warm(None, LIMITS)
            snapshot, env_dir = await registry.episodes.prepare(TaskRef(EMPTY))
            key = PoolKey(snapshot, env_dir, SessionLimits(**{**LIMITS.__dict__, "episode_s": HORIZON_S}))
            await _ready(registry, key, 1)

            first = await registry.open(None, LIMITS, env={"MARK": "one"}, gateway=None, lease_s=None)
            assert first.warm, registry.pool.stats()
            assert (await _exec(registry, first, MESS)).stdout.strip() == "1"  # its process ran
            seen = await _exec(registry, first, "ls /repo /tmp \"$HOME\"; git -C /repo config user.name")
            assert seen.stdout.count("planted") == 4, seen  # and its files stayed in its own layer
            await _exec(registry, first, "kill -9 -1; true")  # and killed what it could
            await registry.close(first)

            await _ready(registry, key, 1)
            second = await registry.open(None, LIMITS, env={"MARK": "two"}, gateway=None, lease_s=None)
            assert second.warm and second.session is not first.session
            assert second.session.limits == first.session.limits
            handed = await _exec(registry, second, PROBE)
            assert handed.ok, handed
            assert "planted" not in handed.stdout and "LEFT" not in handed.stdout, handed.stdout

            cold = await registry.host.open(key.snapshot, limits=key.limits, env_dir=key.env_dir, env={"MARK": "two"})
            try:
                fresh = await cold.exec(PROBE, cwd=second.session.workdir)
            finally:
                await cold.close()
            assert handed.stdout == fresh.stdout, (handed.stdout, fresh.stdout)
            assert handed.stdout.startswith("mark=two\n")
            await registry.close(second)
        finally:
            await registry.shutdown()

    asyncio.run(main())
