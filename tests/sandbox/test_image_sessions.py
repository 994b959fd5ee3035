"""Sessions whose root filesystem is a task's OCI image (built here with podman FROM the local Debian
base): the image unpacked once, its work dir and user, edits and the diff, system paths in the
episode's own layer, and the session threats again inside the image (network, processes, other
episodes, PID 1, the host's files, setuid and device nodes, limits, output floods, processes that
try to outlive their command)."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path

import pytest

from coderl.errors import InvalidTask
from coderl.sandbox.image_build import reference_of
from coderl.sandbox.image_rootfs import ImageRoot, unpack
from coderl.sandbox.image_session import host_python
from coderl.sandbox.session import GATEWAY_SOCKET, SessionHost, SessionLimits
from coderl.swe.episodes import LocalEpisodes
from coderl.swe.task import RepoTask
from coderl.swe.task_ref import ImageRef, TaskRef
from tests.helpers.images import DEBIAN, built_image, local_bases
from tests.helpers.tampered_git import PLANT_HOOK, PWNED, diff_past_tampered_git
from tests.sandbox.test_sessions import _alive_with

# slow: the first run builds the local Debian base (mmdebstrap, ~3 min on 2 vCPUs); then ~75 s here
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
LIMITS = SessionLimits(episode_s=120, exec_s=20, memory_mb=512, max_processes=64, output_kb=64, disk_mb=64)
DOCKERFILE = f"""FROM {DEBIAN}
COPY work /work
COPY suid /opt/suid
ENV GREETING=from-image
WORKDIR /work
"""


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> ImageRoot:
    ctx = tmp_path_factory.mktemp("ctx")
    (ctx / "work").mkdir()
    (ctx / "work" / "m.py").write_text("def add(a, b):\n    return a - b\n")
    (ctx / "work" / ".gitignore").write_text("__pycache__/\n")
    (ctx / "suid").write_bytes(Path("/usr/bin/id").read_bytes())  # a real binary: the kernel ignores setuid scripts
    (ctx / "suid").chmod(0o4755)
    tag = built_image("session", ctx, DOCKERFILE)
    return unpack(tag, tmp_path_factory.mktemp("cache"), pull=False)


def run(coro_fn):
    async def main():
        async with SessionHost() as host:
            return await coro_fn(host)

    return asyncio.run(main())


def test_unpacked_once_with_the_image_config(image, tmp_path):
    assert (image.workdir, image.env["GREETING"]) == ("/work", "from-image")
    assert (image.rootfs / "work" / "m.py").is_file() and (image.rootfs / "bin" / "bash").exists()
    again = unpack(image.reference, image.home.parent.parent, pull=False)
    assert again == image  # the cache answers: same id, same tree
    kept = [p for p in image.rootfs.joinpath("dev").iterdir() if not p.is_symlink()]
    assert kept and not [p for p in kept if p.is_char_device() or p.is_block_device()]  # no device nodes


def test_episode_in_the_image(image):
    async def body(host):
        async with await host.open_image(image, limits=LIMITS) as s:
            r = await s.exec("id -u; pwd; echo $GREETING; cat m.py; grep -c . /etc/os-release >/dev/null && echo os")
            assert r.stdout.split("\n")[:4] == ["0", "/work", "from-image", "def add(a, b):"], r
            await s.str_replace("m.py", "a - b", "a + b")
            await s.create("pkg/new.py", "X = 1\n")
            r = await s.exec("echo changed > /etc/motd-agent && mkdir -p __pycache__ && touch __pycache__/x.pyc"
                             " && cat /etc/motd-agent")
            assert r.stdout == "changed\n", r  # a system path: writable, in the episode's own layer
            diff = await s.finish()
            assert "+    return a + b" in diff and "b/pkg/new.py" in diff
            assert "motd" not in diff and "pyc" not in diff  # the work dir's change only
        assert not (image.rootfs / "etc" / "motd-agent").exists()  # the unpacked image is never written
        async with await host.open_image(image, limits=LIMITS, workdir="/tmp", user="nobody") as s:
            r = await s.exec("id -u; pwd; /opt/suid -u; cat /etc/motd-agent")
            assert r.stdout.split("\n")[:3] == ["65534", "/tmp", "65534"] and "No such file" in r.stderr, r
    run(body)


def test_threats_inside_an_image_session(image, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST-SECRET")
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    async def body(host):
        a = await host.open_image(image, limits=LIMITS)
        b = await host.open_image(image, limits=LIMITS)
        try:
            r = await a.exec(f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>&1 && echo REACHED; "
                             "(exec 3<>/dev/tcp/1.1.1.1/80) 2>&1 && echo REACHED; tail -n +3 /proc/net/dev | cut -d: -f1")
            assert "REACHED" not in r.stdout and r.stdout.split()[-1:] == ["lo"] and "REACHED" not in r.stdout, r
            r = await a.exec(f"cat {secret} /root/.ssh/* 2>&1; echo x > {host_python()[1][0][1]}/f; "
                             "echo x > /coderl/session_init.py; grep CapEff /proc/self/status")
            assert "HOST-SECRET" not in r.stdout and "CapEff:\t0000000000000000" in r.stdout, r
            assert r.stderr.count("Read-only file system") == 2, r
            r = await a.exec("unshare -U true 2>&1 || echo no-unshare; mknod /tmp/sda b 8 0 2>&1 || echo no-mknod")
            assert "no-unshare" in r.stdout and "no-mknod" in r.stdout, r
            await a.exec("echo secret-a > mine.txt; echo x > /etc/a-only; sleep 4716 & echo started")
            r = await b.exec("cat mine.txt /etc/a-only; cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
            assert "secret-a" not in r.stdout and "x" not in r.stdout.split() and "4716" not in r.stdout, r
            r = await a.exec("printf junk > /proc/1/fd/1; kill -9 1; echo done")
            assert r.stdout == "done\n" and (await a.exec("echo alive")).stdout == "alive\n"
            r = await a.exec("head -c 100000000 /dev/zero > big; echo $?")
            assert r.stdout.strip() != "0"  # the episode's disk is 64 MiB
            r = await a.exec("for i in $(seq 200); do sleep 5 & done; wait", timeout_s=5)
            assert "fork" in r.stderr or "Resource temporarily unavailable" in r.stderr, r
            r = await a.exec("(setsid sleep 4721 &); nohup sleep 4722 >/dev/null 2>&1 & echo bg")
            assert r.stdout == "bg\n" and _alive_with("4721") == [] and _alive_with("4722") == [], r  # died with it
            r = await a.exec("yes | head -c 1000000")
            assert r.stdout_truncated and len(r.stdout) == 64 * 1024 and not r.output_limit, r
            r = await a.exec("yes", timeout_s=15)  # a flood ends long before its timeout
            assert r.output_limit and not r.timed_out and r.wall_s < 10, r
            r = await a.exec("tail /dev/zero", timeout_s=60)  # one endless line held whole: GB/s of memory
            assert r.exit_code != 0 and r.oom_killed, r  # the episode's 512 MiB
            assert (await a.exec("echo still-here")).stdout == "still-here\n"
        finally:
            await a.close()
            await b.close()
        for s in (a, b):
            assert str(s.layer.root) not in Path("/proc/self/mountinfo").read_text() and s.cgroup is None
    try:
        run(body)
    finally:
        server.close()


def test_the_gateway_is_the_way_out(image, tmp_path):
    sock_path = str(tmp_path / "gw.sock")
    gateway = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    gateway.bind(sock_path)
    gateway.listen()

    def answer():
        conn, _ = gateway.accept()
        conn.recv(100)
        conn.sendall(b"from-gateway")
        conn.close()

    threading.Thread(target=answer, daemon=True).start()

    async def body(host):
        async with await host.open_image(image, limits=LIMITS, gateway_socket=sock_path, gateway_port=18080) as s:
            assert (await s.exec(f"test -S {GATEWAY_SOCKET} && echo bound")).stdout == "bound\n"
            r = await s.exec("exec 3<>/dev/tcp/127.0.0.1/18080; printf GET >&3; timeout 5 cat <&3")
            assert r.stdout == "from-gateway", r
    try:
        run(body)
    finally:
        gateway.close()


def test_the_diff_ignores_the_agents_git_and_keeps_links_as_links(image):
    """The agent makes its own .git in the work dir (config with an fsmonitor command, hooks, a commit
    hiding its change) and links out of the tree: the capture uses the image's snapshot and our git,
    so the diff is the true one, nothing of the agent's runs, and a link stays a link."""
    async def body(host):
        async with await host.open_image(image, limits=LIMITS) as s:
            diff = await diff_past_tampered_git(s, f"mkdir -p .git/hooks && printf '[core]\\n\\tfsmonitor = touch {PWNED}\\n' "
                                                   f"> .git/config && {PLANT_HOOK} && ln -s /etc/shadow leak")
            assert "new file mode 120000" in diff and "+/etc/shadow" in diff and "root:" not in diff, diff
    run(body)


def test_a_row_whose_image_is_a_dockerfile_runs_as_the_rows_user(tmp_path):
    """The agent loop's local image episode (`LocalEpisodes`) on a row whose image names a Dockerfile
    (FROM the local base, COPY only: built once by its content, then unpacked like any image) and whose
    ``image_user`` overrides the image's (root): the harness runs as that user in the image's work dir,
    its change in the diff; a user the image lacks is refused by name."""
    local_bases()
    ctx = tmp_path / "ctx"
    (ctx / "work").mkdir(parents=True)
    (ctx / "work" / "m.py").write_text("X = 1\n")
    (ctx / "Dockerfile").write_text(f"FROM {DEBIAN}\nCOPY work /work\nWORKDIR /work\n")
    gateway = socket.socket(socket.AF_UNIX)
    gateway.bind(str(tmp_path / "gw.sock"))
    gateway.listen()
    task = RepoTask(instance_id="dockerfile-row", repo="o/r", base_commit="0" * 40, problem_statement="",
                    fail_to_pass=("t.py::t",), pass_to_pass=())

    def episode(user: str):
        ref = TaskRef.of_repo_task(task, image=ImageRef(str(ctx / "Dockerfile"), user=user), cache_dir=tmp_path / "cache")

        async def body(host):
            return await LocalEpisodes(host, gateway_socket=str(tmp_path / "gw.sock")).run_harness(
                ref, "id -un > who.txt; pwd >> who.txt", task="t", session_id="s1", model="m", timeout_s=60)
        return run(body)

    try:
        result = episode("nobody")
        assert result.exit_code == 0 and "+nobody\n+/work\n" in (result.diff or ""), result
        assert unpack(reference_of(str(ctx)), tmp_path / "cache", pull=False).workdir == "/work"  # built under its tag
        with pytest.raises(InvalidTask, match="user 'agent' is not in its /etc/passwd"):  # the row's fault
            episode("agent")
    finally:
        gateway.close()
