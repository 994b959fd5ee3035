"""Agent sessions on the real sandbox: the episode's tools, its limits, and the threats that apply to a
long-lived sandbox (another episode's files, the network, processes outliving the episode, the
diff's capture under a tampered .git)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from coderl.errors import BadRequest, DiffUnavailable, EditRejected, SessionFailure
from coderl.sandbox.session import GATEWAY_SOCKET, SessionHost, SessionLimits
from tests.helpers.poll import wait_for_async
from tests.helpers.require import require
from tests.helpers.tampered_git import PLANT_HOOK, PWNED, diff_past_tampered_git

LIMITS = SessionLimits(episode_s=120, exec_s=20, memory_mb=512, max_processes=64, output_kb=64, disk_mb=32)


def run(coro_fn):
    """Run ``coro_fn(host)`` with a fresh SessionHost."""
    async def main():
        async with SessionHost() as host:
            return await coro_fn(host)

    return asyncio.run(main())


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("repo")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    (path / "m.py").write_text("def add(a, b):\n    return a - b\n")
    (path / ".gitignore").write_text("__pycache__/\n")
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *cmd], cwd=path, env=env, check=True)
    return path


def _alive_with(token: str) -> list[int]:
    """The processes running ``sleep <token>`` (the whole command line: a token met anywhere in one,
    e.g. inside a Ray raylet's memory figure, is another process)."""
    found = []
    argv = b"sleep\0" + token.encode() + b"\0"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == argv:
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_shell_edits_and_diff(repo):
    async def body(host):
        async with await host.open(repo, limits=LIMITS) as s:
            r = await s.exec("id -u; pwd; cat m.py; echo oops >&2; exit 3")
            assert (r.exit_code, r.stdout.split("\n")[:2], r.stderr) == (3, ["65534", "/repo"], "oops\n")
            assert "     2\t    return a - b" in await s.view("m.py")
            await s.str_replace("m.py", "a - b", "a + b")
            with pytest.raises(EditRejected):
                await s.str_replace("m.py", "not there", "x")
            await s.create("pkg/new.py", "X = 1\n")
            await s.insert("pkg/new.py", 0, "# head")
            assert (await s.read_file("pkg/new.py")) == b"# head\nX = 1\n"
            assert "pkg/" in await s.view(".")
            r = await s.exec("mkdir -p __pycache__ && touch __pycache__/x.pyc && git status --short")
            assert " M m.py" in r.stdout
            diff = await s.finish()
            assert "+    return a + b" in diff and "b/pkg/new.py" in diff and "pyc" not in diff
            assert await s.finish() == diff  # idempotent
    run(body)


def test_episodes_cannot_see_each_other(repo):
    async def body(host):
        a = await host.open(repo, limits=LIMITS)
        b = await host.open(repo, limits=LIMITS)
        try:
            await a.exec("echo secret-a > mine.txt; echo tmp-a > /tmp/t; sleep 30 & echo started")
            r = await b.exec("cat mine.txt /tmp/t; cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
            assert "secret-a" not in r.stdout and "tmp-a" not in r.stdout
            assert "sleep" not in r.stdout and "session_init" in r.stdout  # its own processes only
            assert "mine.txt" not in await b.finish()
            assert "mine.txt" in await a.finish()
            assert not (repo / "mine.txt").exists()  # the pristine tree is never written
        finally:
            await a.close()
            await b.close()
        for s in (a, b):  # nothing left behind: no mount, no layer directory, no cgroup
            assert str(s.layer.root) not in Path("/proc/self/mountinfo").read_text()
            assert not s.layer.root.exists() and s.cgroup is None
    run(body)


def test_no_network_but_the_gateway(repo, tmp_path):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    sock_path = str(tmp_path / "gw.sock")
    gateway = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    gateway.bind(sock_path)
    gateway.listen()

    def answer():
        for _ in range(2):
            conn, _ = gateway.accept()
            conn.recv(100)
            conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nfrom-gateway")
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    probe = ("import socket,sys\n"
             f"for addr in [('127.0.0.1', {port}), ('1.1.1.1', 80), ('10.0.2.2', 22)]:\n"
             "    try:\n"
             "        socket.create_connection(addr, timeout=2); print('REACHED', addr)\n"
             "    except OSError as e: print('blocked', e.errno)\n")

    async def body(host):
        async with await host.open(repo, limits=LIMITS, gateway_socket=sock_path, gateway_port=18080) as s:
            r = await s.exec(f"python3 -c \"{probe}\"")
            assert "REACHED" not in r.stdout and r.stdout.count("blocked") == 3, r
            via_unix = (f"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{GATEWAY_SOCKET}'); s.sendall(b'GET'); "
                        "print(s.recv(100))")
            r = await s.exec(f'python3 -c "{via_unix}"')
            assert "from-gateway" in r.stdout, r
            via_tcp = ("import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:18080/v1', "
                       "timeout=5).read())")
            r = await s.exec(f'python3 -c "{via_tcp}"')
            assert "from-gateway" in r.stdout, r
    try:
        run(body)
    finally:
        server.close()
        gateway.close()


def test_processes_die_with_their_command_and_the_episode(repo):
    async def body(host):
        s = await host.open(repo, limits=LIMITS)
        r = await s.exec("(setsid sleep 4711 &); nohup sleep 4712 >/dev/null 2>&1 & echo bg")
        assert r.stdout == "bg\n"
        assert _alive_with("4711") == [] and _alive_with("4712") == []  # killed when their command ended
        r = await s.exec("sleep 4713", timeout_s=0.5)
        assert r.timed_out and r.signal == 9 and _alive_with("4713") == []
        task = asyncio.create_task(s.exec("sleep 4714 & sleep 4715"))
        await wait_for_async(lambda: _alive_with("4715"), what="the command's `sleep 4715` running")
        await s.close()  # mid-command: everything dies
        assert _alive_with("4714") == [] and _alive_with("4715") == []
        with pytest.raises(SessionFailure):
            await task
    run(body)


def test_episode_limits(repo):
    async def body(host):
        async with await host.open(repo, limits=LIMITS) as s:
            r = await s.exec("yes | head -c 1000000")
            assert r.stdout_truncated and len(r.stdout) == 64 * 1024 and not r.output_limit
            r = await s.exec("yes", timeout_s=15)  # a flood ends long before its timeout
            assert r.output_limit and not r.timed_out and r.signal == 9 and r.wall_s < 10
            r = await s.exec("head -c 100000000 /dev/zero > big; echo $?")
            assert r.stdout.strip() != "0" or "No space" in r.stderr  # the episode's disk is 32 MiB
            r = await s.exec("python3 -c \"b = bytearray(2000 << 20); print(len(b))\"")
            assert r.exit_code != 0 and "2097152000" not in r.stdout
            r = await s.exec("for i in $(seq 200); do sleep 5 & done; wait", timeout_s=5)
            assert "fork" in r.stderr or "Resource temporarily unavailable" in r.stderr
            assert (await s.exec("echo still-here")).stdout == "still-here\n"
    run(body)


def test_every_process_of_the_episode_is_in_its_cgroup(repo):
    """The joining shell moves itself (``0`` into v1's ``tasks``, not its pid into ``cgroup.procs``,
    which waits out an RCU grace period): bubblewrap, PID 1 and a command's processes are all in
    the episode's group of every controller, seen from the host."""
    async def body(host):
        require(host.cgroups.available, f"no cgroups here: {host.cgroups.support.detail}")
        async with await host.open(repo, limits=LIMITS) as s:
            task = asyncio.create_task(s.exec("sleep 4721"))
            await wait_for_async(lambda: _alive_with("4721"), what="the command's `sleep 4721` running")
            root = host.cgroups.root
            wanted = [f":/{d.relative_to(root if s.cgroup.version == 'v2' else root / c)}"
                      for c, d in s.cgroup.dirs.items()]
            pids = [s._proc.pid, *_alive_with("4721")]
            pids += [int(p) for p in Path(f"/proc/{s._proc.pid}/task/{s._proc.pid}/children").read_text().split()]
            assert len(pids) >= 3  # bubblewrap, its PID 1, the sleep
            for pid in pids:
                lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
                assert all(any(line.endswith(w) for line in lines) for w in wanted), (pid, lines, wanted)
            await s.close()
            with pytest.raises(SessionFailure):
                await task
    run(body)


def test_diff_capture_ignores_a_tampered_git_dir(repo):
    """The agent rewrites .git (config with an fsmonitor command, hooks, index, HEAD): the capture
    uses the pristine .git and our git, so the diff is the true one and nothing of the agent runs."""
    async def body(host):
        async with await host.open(repo, limits=LIMITS) as s:
            await diff_past_tampered_git(s, f"git config core.fsmonitor 'touch {PWNED}; false'; {PLANT_HOOK}; git add -A; "
                                            "git -c user.email=a@b -c user.name=x commit -qm hide; echo junk > .git/index")
    run(body)


def test_symlinks_in_the_diff_are_links_not_contents(repo):
    async def body(host):
        async with await host.open(repo, limits=LIMITS) as s:
            r = await s.exec("cat /etc/shadow; ln -s /etc/shadow leak; ln -s /proc/1/environ env")
            assert "root:" not in r.stdout and "No such file" in r.stderr
            diff = await s.finish()
            assert "new file mode 120000" in diff and "+/etc/shadow" in diff and "root:" not in diff
    run(body)


def test_commands_cannot_reach_pid_1(repo):
    """PID 1 is non-dumpable: no command writes into its protocol pipe or its memory, and the
    signals a command sends it are ignored; the session goes on answering truly."""
    async def body(host):
        async with await host.open(repo, limits=LIMITS) as s:
            r = await s.exec("printf 'junk' > /proc/1/fd/1; cat /proc/1/environ; head -c 1 /proc/1/mem; "
                             "kill -9 1; kill -STOP 1; echo done")
            assert r.stdout == "done\n" and r.stderr.count("ermission denied") >= 3, r
            assert (await s.exec("echo alive")).stdout == "alive\n"
    run(body)


def _commit(path: Path, message: str, files: dict[str, str]) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for name, text in files.items():
        (path / name).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=path, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=path, env=env, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True, check=True).stdout.strip()


def test_git_history_stops_at_the_snapshot(tmp_path):
    """A SWE-bench-like mirror: two commits up to the task's base, then the upstream fix on the main
    branch, on a second branch and under a tag. In an episode over the snapshot RepoStore makes, no
    git command finds the fix: not the history of every ref, not the refs, not the object store
    (unreachable objects included), not asking for its commit or its blob by sha."""
    from coderl.swe.store import RepoStore

    mirror = tmp_path / "repos" / "acme__calc"
    mirror.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(mirror)], check=True)
    first = _commit(mirror, "first", {"m.py": "def add(a, b):\n    return a - b\n"})
    base = _commit(mirror, "base", {"README": "calc\n"})
    fix = _commit(mirror, "the upstream fix", {"m.py": "def add(a, b):\n    return a + b  # UPSTREAM-FIX\n"})
    fix_blob = subprocess.run(["git", "rev-parse", f"{fix}:m.py"], cwd=mirror, capture_output=True, text=True,
                              check=True).stdout.strip()
    subprocess.run(["git", "branch", "upstream", fix], cwd=mirror, check=True)
    subprocess.run(["git", "tag", "v1-fixed", fix], cwd=mirror, check=True)

    snapshot = RepoStore(tmp_path / "repos", tmp_path / "cache").snapshot("acme/calc", base)

    async def body(host):
        async with await host.open(snapshot, limits=LIMITS) as s:
            history = await s.exec("git log --all --format=%H")
            assert history.ok and history.stdout.split() == [base, first], history
            refs = await s.exec("git for-each-ref --format='%(refname)'; git tag; git branch -a; git reflog --all")
            assert "upstream" not in refs.stdout and "v1-fixed" not in refs.stdout, refs
            objects = await s.exec("git cat-file --batch-all-objects --batch-check='%(objectname)'")
            assert objects.ok and len(objects.stdout.split()) >= 6, objects  # 2 commits, 2 trees, 2 blobs
            assert fix not in objects.stdout and fix_blob not in objects.stdout, objects
            for sha in (fix, fix_blob):
                asked = await s.exec(f"git cat-file -p {sha}")
                assert not asked.ok and "UPSTREAM-FIX" not in asked.stdout, asked
            grep = await s.exec("git log --all -p | grep -c UPSTREAM-FIX")
            assert grep.stdout.strip() == "0", grep
            assert "a - b" in (await s.exec("cat m.py")).stdout
    run(body)


def test_unreadable_files_make_no_diff_and_a_missing_gateway_is_named(repo, tmp_path):
    async def body(host):
        with pytest.raises(BadRequest, match="gateway socket"):
            await host.open(repo, limits=LIMITS, gateway_socket=str(tmp_path / "nothing.sock"))
        async with await host.open(repo, limits=LIMITS) as s:
            await s.exec("echo secret > hidden.py; chmod 000 hidden.py")
            with pytest.raises(DiffUnavailable, match="hidden.py"):
                await s.finish()
    run(body)
