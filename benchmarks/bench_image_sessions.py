"""What a task image costs (issue 36): unpacking it, starting an episode on it, and keeping one idle.

- unpack: seconds from a reference to a ready root filesystem in an EMPTY cache (``image_rootfs.unpack``:
  inspect, create + export, tar, device nodes out), the image's size; then the cached start (the same
  call on the filled cache: inspect + the ready marker) p50 over 10 calls; and the work dir's first
  snapshot (``pristine_git``, once per image);
- start: ms from ``open`` / ``open_image`` to the answer of a first command (``true``), sequential,
  ALTERNATED between today's host-root session (over a small git repository) and an image-backed
  one (the same limits), p50/p90 of each and their ratio (target: within 1.2x at p50);
- idle memory: K image-backed episodes open at once, idle; MiB charged to each one's cgroup (its
  processes and its layer's tmpfs pages), beside K host-root episodes measured the same way.

Images (``--image``, repeatable): references podman has; default the local Debian base and, when
built by the tests, the SWE-bench-shaped flask image.

    CONTAINERS_CONF=docker/podman-containers.conf nice -n 19 python benchmarks/bench_image_sessions.py \\
        [--image REF ...] [--starts 30] [--idle 16]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench_sessions import cgroup_mib, pct

from coderl.sandbox import image_rootfs
from coderl.sandbox.session import SessionHost, SessionLimits

LIMITS = SessionLimits(episode_s=600, exec_s=300, memory_mb=1024, max_processes=128, disk_mb=256)
DEFAULT_IMAGES = ("localhost/coderl-base/debian:bookworm",)


def small_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    (repo / "m.py").write_text("def add(a, b):\n    return a - b\n")
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b", "PATH": "/usr/bin:/bin"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *cmd], cwd=repo, env=env, check=True)
    return repo


def unpack_costs(reference: str, cache: Path) -> image_rootfs.ImageRoot:
    size = subprocess.run([image_rootfs.engine(), "image", "inspect", "--format", "{{.Size}}", reference],
                          capture_output=True, text=True, check=True).stdout.strip()
    t0 = time.perf_counter()
    image = image_rootfs.unpack(reference, cache, pull=False)
    first = time.perf_counter() - t0
    cached = []
    for _ in range(10):
        t1 = time.perf_counter()
        image_rootfs.unpack(reference, cache, pull=False)
        cached.append(1000 * (time.perf_counter() - t1))
    t2 = time.perf_counter()
    workdir = image.workdir if image.workdir != "/" else "/tmp"
    image.pristine_git(workdir)
    snap = time.perf_counter() - t2
    print(f"{reference}: {int(size) / 2**20:.0f} MiB; first unpack {first:.1f} s; cached start p50 "
          f"{statistics.median(cached):.0f} ms (engine inspect + ready marker); work dir {workdir} snapshot {snap:.2f} s")
    return image


async def starts(host: SessionHost, repo: Path, image: image_rootfs.ImageRoot, n: int) -> None:
    workdir = image.workdir if image.workdir != "/" else "/tmp"
    host_ms, image_ms = [], []
    for i in range(2 * n):  # alternated, so load drifts touch both alike
        t0 = time.perf_counter()
        if i % 2:
            s = await host.open_image(image, workdir=workdir, limits=LIMITS)
        else:
            s = await host.open(repo, limits=LIMITS)
        await s.exec("true")
        (image_ms if i % 2 else host_ms).append(1000 * (time.perf_counter() - t0))
        await s.close()
    h, m = statistics.median(host_ms), statistics.median(image_ms)
    print(f"  open + first command: host root p50 {h:.1f} ms p90 {pct(host_ms, 0.9):.1f}; image p50 {m:.1f} ms "
          f"p90 {pct(image_ms, 0.9):.1f}; ratio at p50 {m / h:.2f}x (n={n} each, alternated)")


async def idle(host: SessionHost, repo: Path, image: image_rootfs.ImageRoot, k: int) -> None:
    workdir = image.workdir if image.workdir != "/" else "/tmp"
    for kind in ("host root", "image"):
        sessions = await asyncio.gather(*(host.open_image(image, workdir=workdir, limits=LIMITS) if kind == "image"
                                          else host.open(repo, limits=LIMITS) for _ in range(k)))
        await asyncio.sleep(1)
        per = statistics.mean(cgroup_mib(s) for s in sessions)
        await asyncio.gather(*(s.close() for s in sessions))
        print(f"  {k} idle {kind} episodes: {per:.2f} MiB charged per episode (its cgroup) = "
              f"{1024 / per:.0f} idle episodes per GiB")


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-images-"))
    repo = small_repo(root)
    async with SessionHost() as host:
        for n, reference in enumerate(args.image or DEFAULT_IMAGES):
            image = unpack_costs(reference, root / f"cache{n}")
            await starts(host, repo, image, args.starts)
            await idle(host, repo, image, args.idle)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", action="append", help="an image reference podman has (repeatable)")
    parser.add_argument("--starts", type=int, default=30)
    parser.add_argument("--idle", type=int, default=16)
    asyncio.run(main(parser.parse_args()))
