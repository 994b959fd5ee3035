"""Remote agent sessions (`coderl serve` /v1/sessions, `coderl.client.RemoteSession`) on the real
service and the real sandbox: the tools and the grade of a repository task, the errors a client
can meet (unknown, expired, another session's token, oversized files and outputs, a full node), the
warm pool, and leases: a client that opens sessions and never closes them gets them reaped, with
their processes, overlays, cgroups and relay sockets gone."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from pathlib import Path
from unittest import mock

import httpx
import pytest

from coderl.client import RemoteSession, SessionService
from coderl.errors import DiffUnavailable, EditRejected, SessionExpired, UnknownSession
from coderl.sandbox.session import SessionLimits
from coderl.swe.task_set import build_task_set
from tests.helpers.poll import wait_for_async
from tests.helpers.service import running_service, service_pid

LIMITS = SessionLimits(episode_s=300, exec_s=60, memory_mb=512, max_processes=64, output_kb=64, disk_mb=64)


@pytest.fixture(scope="module")
def task_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe")
    return root, build_task_set(root)


@contextlib.contextmanager
def sessions_service(tmp_path_factory, repos: Path, **env: str):
    """A real `coderl serve` whose session layers and relays live in a directory the test sees."""
    session_dir = tmp_path_factory.mktemp("sessions")
    with mock.patch.dict(os.environ, {"CODERL_SWE_REPOS": str(repos), "CODERL_SESSION_DIR": str(session_dir),
                                      **env}), running_service(slots=1) as url:
        yield url, session_dir


@pytest.fixture(scope="module")
def service(tmp_path_factory, task_set):
    with sessions_service(tmp_path_factory, task_set[0] / "repos", CODERL_SESSIONS_MAX="6",
                          CODERL_SESSION_POOL="2") as found:
        yield found


def run(coro):
    return asyncio.run(coro)


def test_tools_diff_and_grade_of_a_repository_task(service, task_set):
    url, _ = service
    task = task_set[1][0]

    async def main():
        async with SessionService(url) as sessions:
            s = await sessions.open(task.to_row(), limits=LIMITS)
            try:
                r = await s.exec("id -u; pwd; git log --oneline | wc -l; echo err >&2; exit 3")
                assert (r.exit_code, r.stdout.split("\n")[:2], r.stderr) == (3, ["65534", "/repo"], "err\n"), r
                r = await s.exec("git apply", stdin=task.gold_patch.encode())
                assert r.exit_code == 0, r
                await s.create("notes/new.txt", "one\nthree\n")
                await s.insert("notes/new.txt", 1, "two")
                await s.str_replace("notes/new.txt", "three", "four")
                assert (await s.read_file("notes/new.txt")) == b"one\ntwo\nfour\n"
                assert "     2\ttwo" in await s.view("notes/new.txt")
                assert ("notes", True) in await s.listdir(".")
                with pytest.raises(EditRejected, match="no occurrences"):
                    await s.str_replace("notes/new.txt", "absent", "x")
                graded = await s.grade()
                assert graded["status"] == "resolved" and graded["reward"] == 1.0, graded
                assert "notes/new.txt" in graded["diff"] and graded["diff"] == await s.finish()
            finally:
                await s.close()
            await s.close()  # idempotent
            with pytest.raises(SessionExpired, match="closed by its client"):
                await s.exec("true")

    run(main())


def test_credentials_unknown_and_expired_sessions(service):
    url, _ = service

    async def main():
        async with SessionService(url) as sessions, httpx.AsyncClient(base_url=url, timeout=60) as http:
            a, b = await sessions.open(limits=LIMITS), await sessions.open(limits=LIMITS)
            token_a = a._auth["authorization"]
            exec_b = f"/v1/sessions/{b.id}/exec"
            seen = {
                "no token": (await http.post(exec_b, json={"cmd": "true"})).status_code,
                "a's token on b": (await http.post(exec_b, json={"cmd": "true"},
                                                   headers={"authorization": token_a})).status_code,
                "a's token to close b": (await http.delete(f"/v1/sessions/{b.id}",
                                                           headers={"authorization": token_a})).status_code,
                "unknown id": (await http.post("/v1/sessions/s-nope/exec", json={"cmd": "true"},
                                               headers={"authorization": token_a})).status_code,
            }
            assert seen == {"no token": 401, "a's token on b": 403, "a's token to close b": 403, "unknown id": 404}
            assert (await b.exec("echo alive")).stdout == "alive\n"  # b untouched by a's attempts
            await b.close()
            gone = await http.post(exec_b, json={"cmd": "true"}, headers={"authorization": b._auth["authorization"]})
            assert (gone.status_code, gone.json()["type"]) == (410, "SessionExpired"), gone.text
            with pytest.raises(UnknownSession):
                await RemoteSession(sessions.client, {"id": "s-nope", "token": "x", "warm": False, "started_ms": 0,
                                                      "limits": {}, "remaining_s": 1, "workdir": "/repo"}).exec("true")
            await a.close()

    run(main())


def test_oversized_files_and_outputs(service):
    url, _ = service

    async def main():
        async with SessionService(url) as sessions, httpx.AsyncClient(base_url=url, timeout=60) as http, \
                await sessions.open(limits=LIMITS) as s:
            auth = s._auth
            big = base64.b64encode(b"x" * ((16 << 20) + 1)).decode()
            r = await http.post(f"/v1/sessions/{s.id}/files/write", json={"path": "big", "data_b64": big},
                                headers=auth)
            assert r.status_code == 413 and "16 MiB" in r.json()["detail"], r.text[:300]
            await s.write_file("mid", b"y" * 5000)
            r = await http.post(f"/v1/sessions/{s.id}/files/read", json={"path": "mid", "max_bytes": 4096},
                                headers=auth)
            assert r.status_code == 413, r.text
            flood = await s.exec("head -c 200000 /dev/zero | tr '\\0' a")
            assert flood.stdout_truncated and len(flood.stdout) == LIMITS.output_kb * 1024, flood.message
            with pytest.raises(DiffUnavailable):  # a file over the 16 MiB diff cap: the agent's doing
                await s.exec("head -c 17000000 /dev/urandom > huge.bin")
                await s.finish()

    run(main())


def test_warm_pool_hands_out_started_sandboxes(service):
    url, _ = service

    async def main():
        async with SessionService(url) as sessions:
            await sessions.warm(limits=LIMITS)
            await wait_for_async(sessions.stats, lambda st: st["pool"]["ready"] >= 2, what="2 warm sandboxes")
            s = await sessions.open(limits=LIMITS, env={"MARK": "handed-out"})
            assert s.warm, "the pool had sandboxes ready"
            r = await s.exec("echo $MARK; ls -a /repo")
            assert r.stdout.split() == ["handed-out", ".", "..", ".git", ".gitkeep"], r
            assert abs(s.remaining_s - LIMITS.episode_s) < 30  # the episode's budget starts at hand-out
            await s.close()
            await wait_for_async(sessions.stats, lambda st: st["pool"]["ready"] >= 2, what="the pool refilled")

    run(main())


def test_full_node_answers_429(service):
    url, _ = service

    async def main():
        async with SessionService(url) as sessions, httpx.AsyncClient(base_url=url, timeout=60) as http:
            opened = []
            try:
                while len(opened) < 6:
                    opened.append(await sessions.open(limits=LIMITS))
                r = await http.post("/v1/sessions", json={})
                assert (r.status_code, r.json()["type"]) == (429, "Overloaded") and "capacity" in r.text, r.text
                assert r.headers["retry-after"]
            finally:
                await asyncio.gather(*(s.close() for s in opened))

    run(main())


def _cgroup_slots(pid: int) -> list[Path]:
    """The session cgroups (``slot1000NN``) of the service process, in every hierarchy (cgroup v1:
    memory and pids, two directories per session)."""
    root = Path("/sys/fs/cgroup")
    return [slot for base in root.glob(f"**/coderl-{pid}-*") for slot in base.glob("slot1*") if slot.is_dir()]


def test_abandoned_sessions_are_reaped_and_their_resources_return(tmp_path_factory, task_set):
    with sessions_service(tmp_path_factory, task_set[0] / "repos", CODERL_SESSION_POOL="0") as (url, session_dir):
        pid = service_pid(url)

        def held() -> dict[str, int]:
            return {"cgroups": len({p.name for p in _cgroup_slots(pid)}),
                    "layers": len(list((session_dir / "layers").iterdir())),
                    "relays": len(list((session_dir / "relays").iterdir()))}

        async def main():
            async with SessionService(url) as sessions:
                # their last requests: each leaves a process behind and 8 MB in its tmpfs, and holds
                # the session busy (never reaped mid-request) while the resources are counted. Each
                # starts as soon as its session is open: started after all four opens, the first
                # session's 3 s lease had to outlast the other three opens (0.15-0.3 s each at load 14,
                # more on a cold machine) or it was reaped before its request
                last = []
                for _ in range(4):
                    session = await sessions.open(limits=LIMITS, lease_s=3.0)
                    last.append(asyncio.ensure_future(session.exec(
                        "sleep 600 >/dev/null 2>&1 & head -c 8000000 /dev/zero > /tmp/fill; sleep 2")))
                await wait_for_async(held, lambda h: h == {"cgroups": 4, "layers": 4, "relays": 4},
                                     what="4 sessions' cgroups, layers and relay sockets")
                assert all(r.exit_code == 0 for r in await asyncio.gather(*last))
                # then nothing: no close, no request
                return await wait_for_async(sessions.stats, lambda st: st["open"] == 0 and st["reaped"] == 4,
                                            what="the 4 leases to expire and be reaped")

        run(main())
        left = {"cgroups": _cgroup_slots(pid), "layers": list((session_dir / "layers").iterdir()),
                "relays": list((session_dir / "relays").iterdir()),
                "mounts": [m for m in Path("/proc/mounts").read_text().splitlines() if str(session_dir) in m],
                "sleepers": [p for p in os.listdir("/proc") if p.isdigit() and _is_sleep_600(p)]}
        assert left == {"cgroups": [], "layers": [], "relays": [], "mounts": [], "sleepers": []}, left


def _is_sleep_600(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x00600\x00"
    except OSError:
        return False
