"""Faults and limits of the real service that the load tests do not reach: settings from CODERL_*
variables, a chunked body over the cap, the per-request deadline, a hung runner, graceful drain."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import httpx
import pytest

from tests.helpers.poll import wait_for, wait_for_async
from tests.helpers.service import descendants, exited, metric, metric_async, running_service, service_pid

SLEEPY = {"code": "import time\ntime.sleep(0.8)\nprint(1)", "tests": {"inputs": [""] * 5, "outputs": ["1"] * 5}}


RUNNER = b"runner.py"


@pytest.fixture(scope="module")
def small_service():
    """One slot, a 1 MiB body cap and a queue of 8, all set through CODERL_* variables."""
    saved = {k: os.environ.get(k) for k in ("CODERL_MAX_BODY_MB", "CODERL_QUEUE")}
    os.environ.update(CODERL_MAX_BODY_MB="1", CODERL_QUEUE="8")
    try:
        with running_service(slots=1) as url:
            yield url
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_settings_come_from_coderl_variables(small_service):
    caps = httpx.get(small_service + "/v1/capabilities").json()
    assert caps["slots"] == 1 and caps["queue_capacity"] == 8


def test_chunked_body_over_the_cap_is_a_clean_413(small_service):
    def chunks():
        for _ in range(40):
            yield b" " * 65536  # 2.5 MiB with no Content-Length: counted as it streams

    r = httpx.post(small_service + "/v1/run", content=chunks(), headers={"content-type": "application/json"},
                   timeout=30)
    assert r.status_code == 413 and "over 1 MiB" in r.json()["detail"]
    assert r.headers["x-coderl-isolation"] == "bwrap"
    again = httpx.post(small_service + "/v1/run", json={"language": "python", "code": "print(2)"})
    assert again.json()["run"]["stdout"] == "2\n"


def test_request_deadline_is_504_with_retry_after(small_service):
    r = httpx.post(small_service + "/v1/judge", json={"submissions": [SLEEPY], "timeout_s": 1}, timeout=30)
    assert r.status_code == 504 and r.headers["Retry-After"] and "deadline of 1 s" in r.json()["detail"]
    assert r.headers["x-coderl-isolation"] == "bwrap"


def test_hung_runner_is_replaced_and_the_work_retried(small_service):
    """A runner that stops answering (SIGSTOP) is given up after its run's wall limit plus a grace
    period, replaced, and the submission resumed on the fresh slot: never a verdict about the program."""
    service = service_pid(small_service)
    # a request that ran past its deadline (the test before) left its slot being replaced in the
    # background: this one waits for the replacement, so the runner stopped below is the live one
    assert httpx.post(small_service + "/v1/run", json={"language": "python", "code": "print(1)"},
                      timeout=60).json()["run"]["stdout"] == "1\n"
    before = descendants(service, RUNNER)
    assert before
    for pid in before:
        os.kill(pid, signal.SIGSTOP)
    body = {"submissions": [{"code": "print(int(input()) * 2)", "tests": {"inputs": ["2\n"], "outputs": ["4\n"]},
                             "limits": {"cpu_s": 1, "wall_s": 1}}]}
    started = time.monotonic()
    result = httpx.post(small_service + "/v1/judge", json=body, timeout=120).json()["results"][0]
    assert result["verdict"] == "accepted" and time.monotonic() - started < 30  # 1 s wall + 10 s grace, then a retry
    # replaced, and the stopped one is gone: the old slot is torn down in the background
    wait_for(lambda: (sorted(set(descendants(service, RUNNER)) & set(before)),
                      metric(small_service, "coderl_slot_restarts")),
             lambda seen: not seen[0] and seen[1] >= 1,
             what="(stopped runners left in the service's tree, coderl_slot_restarts) to be ([], >= 1)")


def test_sigterm_drains_in_flight_work_then_stops():
    with running_service(slots=1) as url:
        service = service_pid(url)

        async def main():
            async with httpx.AsyncClient(timeout=60) as c:
                request = asyncio.ensure_future(c.post(url + "/v1/judge", json={"submissions": [SLEEPY]}))
                await wait_for_async(lambda: metric_async(c, url, "coderl_slots_busy"), lambda busy: busy == 1,
                                     what="the work running on the one slot (coderl_slots_busy 1)")
                os.kill(service, signal.SIGTERM)
                return await request

        response = asyncio.run(main())
        assert response.status_code == 200 and response.json()["results"][0]["verdict"] == "accepted"
        wait_for(lambda: exited(service), what=f"the drained service (pid {service}) to exit after SIGTERM")
        with pytest.raises(httpx.ConnectError):
            httpx.get(url + "/healthz", timeout=5)


def test_serve_refuses_an_fd_that_is_not_a_listening_socket(tmp_path):
    """`coderl serve --fd` (how the tests' launcher hands over a port it already holds) names a
    wrong descriptor in one line instead of failing later inside the event loop."""
    import socket
    import subprocess
    import sys

    def serve_on(fd: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "coderl.cli", "serve", "--isolation", "none", "--fd", str(fd)],
                              pass_fds=(fd,), capture_output=True, text=True, timeout=120)

    with open(tmp_path / "file", "w") as not_a_socket:
        done = serve_on(not_a_socket.fileno())
    assert done.returncode == 2 and "not an open socket" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    with socket.socket() as bound_only:
        bound_only.bind(("127.0.0.1", 0))
        done = serve_on(bound_only.fileno())
    assert done.returncode == 2 and "not a listening TCP socket" in done.stderr, done.stderr
