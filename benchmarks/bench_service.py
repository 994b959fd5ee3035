"""Service benchmark: coderl's HTTP service vs a naive unisolated service, in the same run.

Prints /run_code hello-world latency p50 (sequential), /run_code throughput with 8 clients, and
/v1/judge test cases/s on 20-case problems with 8 clients; the same workloads on the naive
baseline (benchmarks/naive_service.py: a `python3 file` subprocess per run, no isolation).

    python benchmarks/bench_service.py [--seconds S] [--slots N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from coderl.server.launch import free_port, running_service

HELLO = {"code": 'print("Hello, world!")', "language": "python"}
SOURCE = "a, b = map(int, input().split())\nprint(a + b)\n"
INPUTS = [f"{i} {i * 3}\n" for i in range(20)]
OUTPUTS = [f"{i * 4}\n" for i in range(20)]


async def latency(url: str, n: int) -> float:
    async with httpx.AsyncClient(timeout=60) as c:
        times = []
        for _ in range(n):
            t = time.perf_counter()
            r = await c.post(url + "/run_code", json=HELLO)
            times.append(time.perf_counter() - t)
            assert r.json()["run_result"]["stdout"] == "Hello, world!\n"
    return statistics.median(times) * 1000


async def rate(url: str, path: str, body: dict, cases: int, clients: int, seconds: float) -> float:
    done = 0
    stop_at = time.perf_counter() + seconds

    async def client(c: httpx.AsyncClient) -> None:
        nonlocal done
        while time.perf_counter() < stop_at:
            r = await c.post(url + path, json=body)
            assert r.status_code == 200, r.text
            done += cases

    t = time.perf_counter()
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=clients)) as c:
        await asyncio.gather(*(client(c) for _ in range(clients)))
    return done / (time.perf_counter() - t)


async def measure(url: str, judge_path: str, judge_body: dict, seconds: float) -> dict[str, float]:
    await latency(url, 5)
    return {
        "p50": await latency(url, 100),
        "run_code": await rate(url, "/run_code", HELLO, 1, 8, seconds),
        "judge": await rate(url, judge_path, judge_body, 20, 8, seconds),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--slots", type=int, default=2)
    args = parser.parse_args()
    ours_body = {"submissions": [{"code": SOURCE, "tests": {"inputs": INPUTS, "outputs": OUTPUTS}}]}
    with running_service(slots=args.slots, queue=512) as url:
        ours = asyncio.run(measure(url, "/v1/judge", ours_body, args.seconds))
    port = free_port()
    naive = subprocess.Popen([sys.executable, "-m", "uvicorn", "naive_service:app", "--port", str(port),
                              "--log-level", "warning"], cwd=Path(__file__).parent)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                httpx.get(base + "/docs")
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        theirs = asyncio.run(measure(base, "/judge", {"code": SOURCE, "inputs": INPUTS, "outputs": OUTPUTS},
                                     args.seconds))
    finally:
        naive.terminate()
        naive.wait()
    print(f"{'figure':<44} {'coderl (bwrap)':>16} {'naive (none)':>14} {'ratio':>7}")
    rows = [("/run_code hello-world p50 (ms, sequential)", "p50"), ("/run_code req/s, 8 clients", "run_code"),
            ("/v1/judge test cases/s, 20-case, 8 clients", "judge")]
    for label, key in rows:
        ratio = theirs[key] / ours[key] if key == "p50" else ours[key] / theirs[key]
        print(f"{label:<44} {ours[key]:>16.1f} {theirs[key]:>14.1f} {ratio:>6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
