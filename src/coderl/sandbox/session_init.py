"""PID 1 of an agent session's sandbox: runs the episode's commands and file operations (stdlib only).

Inside the sandbox this is ``/coderl/session_init.py``. The host (``coderl.sandbox.session``)
talks to it over bubblewrap's stdin/stdout with ``frames``, one request at a time:

- ``exec``: ``/bin/bash -c CMD`` in a fresh process (its own session, stdin from a blob, stdout
  and stderr through pipes kept up to ``output_bytes`` each, the rest drained and dropped), under
  the episode's rlimits, until it exits or ``timeout_s`` passes; then everything it started is
  killed (``reap.kill_children``), so no process outlives its command. Answer: exit code or
  signal, ``timed_out``, truncation flags, wall seconds, and the two outputs as blobs. With
  ``survivors`` (a verifier's run), also every process still there, alive or ended, when the
  command itself ended: what could have written after it (``_poll``).
- ``keep``: ``argv`` started as a process of the episode that outlives the commands (spared by
  the reaping with all it starts, as the relay is: an environment's test services, which an
  agent's test runs reach as a grading run does, ``coderl.swe.grading_run.start_in_session``).
  Answered once the process has closed its stdout and stderr (it is ready: ``running``) or has
  exited (its exit code), with its output; after ``timeout_s`` it is killed (``timed_out``).
- ``read``: a regular file's bytes (up to ``max_bytes``), ``write``: create or replace a file
  (parents made), ``listdir``: a directory's entries. These run here, as the sandbox's uid in the
  sandbox's mount namespace, so a path or a symlink the agent made can only reach what the agent
  itself can reach. A FIFO or device is refused, never opened for reading (it would block PID 1).

PID 1 of a pid namespace ignores the signals the program may send it; every orphan is re-parented
here and reaped with the rest. A ``forward`` process (started once, spared by the reaping) relays
TCP connections on the namespace's own 127.0.0.1:PORT to one unix socket bound in from the host:
the episode's only way out (the model gateway).
"""

from __future__ import annotations

import os
import select
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# their byte code is in ``/coderl/__pycache__``, compiled on the host (coderl.sandbox.inside_pyc)
import pid1  # noqa: E402 - the modules beside this file (``/coderl`` in the sandbox)
import reap  # noqa: E402
from output_cap import CappedOutput  # noqa: E402
from wire import write_all  # noqa: E402

del sys.path[0]

PROTO_IN, PROTO_OUT = 0, 1
SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"  # an image may have no bash
OUTPUT_KILL_FACTOR = 64  # a command that prints this many times what is kept is killed, not drained until its timeout
DRAIN_AFTER_EXIT_S = 0.2  # output still in the pipes once the command exited (a background writer holds them)
_SPARED: set[int] = set()  # the relay and the kept processes: a command's end never kills them


def _rlimits(by_name: dict[str, int]) -> list[tuple[int, int, int]]:
    """The host's rlimits (``{"RLIMIT_NOFILE": n, ...}``) as (resource, soft, hard), soft = hard."""
    import resource

    return [(getattr(resource, name), value, value) for name, value in by_name.items()]


def do_exec(req: dict, stdin: bytes) -> tuple[dict, list[bytes]]:
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_fd = os.memfd_create("stdin", 0)
    write_all(in_fd, stdin)
    os.lseek(in_fd, 0, os.SEEK_SET)
    env = req["env"]
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.dup2(in_fd, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.closerange(3, 65536)
            os.chdir(req["cwd"])
            with open("/proc/self/oom_score_adj", "w") as fh:  # the OOM killer takes the command, not PID 1
                fh.write("1000")
            pid1.set_rlimits(_rlimits(req["rlimits"]))
            os.execve(SHELL, [SHELL, "-c", req["cmd"]], env)
        except BaseException as exc:  # noqa: BLE001 - report and die, never return into PID 1's loop
            os.write(2, f"session: cannot start the command: {exc}\n".encode())
        finally:
            os._exit(127)
    for fd in (out_w, err_w, in_fd):
        os.close(fd)
    cap = int(req["output_bytes"])
    output = CappedOutput({out_r: cap, err_r: cap})
    deadline = started + float(req["timeout_s"])
    status: int | None = None
    timed_out = output_limit = False
    open_fds = [out_r, err_r]
    drain_until: float | None = None
    careful = bool(req.get("survivors"))
    survivors: list[str] = []
    while open_fds and not output_limit:
        now = time.monotonic()
        if status is None:
            status = _poll(pid, careful)
            if status is not None:
                drain_until = now + DRAIN_AFTER_EXIT_S
                survivors = _others() if careful else []
        if now >= deadline and status is None:
            timed_out = True
            break
        if drain_until is not None and now >= drain_until:
            break
        limit = (drain_until if drain_until is not None else deadline) - now
        ready, _, _ = select.select(open_fds, [], [], min(max(limit, 0), 0.05))
        for fd in ready:
            if not output.read(fd):
                open_fds.remove(fd)
        output_limit = output.dropped > OUTPUT_KILL_FACTOR * cap and status is None
    nap = 0.0001  # the exit is mostly a moment behind the pipes' close (1 exec in 5): a short nap first
    while status is None and not timed_out and not output_limit:  # the pipes closed first: wait for the exit itself
        status = _poll(pid, careful)
        if status is not None:
            survivors = _others() if careful else []
        elif time.monotonic() >= deadline:
            timed_out = True
        else:
            time.sleep(nap)
            nap = min(2 * nap, 0.002)
    reap.kill_children(spare=frozenset(_SPARED))  # the command and all it started, the timed-out one too
    for fd in (out_r, err_r):
        os.close(fd)
    reply = {
        "exit_code": os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None,
        "signal": 9 if status is None else (os.WTERMSIG(status) if os.WIFSIGNALED(status) else None),
        "timed_out": timed_out,
        "output_limit": output_limit,
        "stdout_truncated": output.truncated[out_r],
        "stderr_truncated": output.truncated[err_r],
        "wall_s": round(time.monotonic() - started, 4),
        "survivors": survivors,
    }
    return reply, [output.bytes(out_r), output.bytes(err_r)]


def _poll(pid: int, careful: bool) -> int | None:
    """The command's wait status, or None while it runs. ``careful``: first reap only the orphans
    that provably ended BEFORE the command (seen dead, then the command seen alive), so that
    every process that was alive when the command ended is still here, alive or a zombie, for
    ``_others`` to count: an orphan's chain always ends at PID 1, which reaps nothing else."""
    while careful:
        try:
            dead = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            break
        if dead is None or dead.si_pid == pid or dead.si_pid in _SPARED:
            break
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            break  # the command ended meanwhile: that orphan may have outlived it, keep it counted
        os.waitpid(dead.si_pid, 0)
    done, st = os.waitpid(pid, os.WNOHANG)
    return st if done else None


def _others() -> list[str]:
    """Every process here but PID 1 and the relays, as ``pid:name`` (zombies included)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid() and int(name) not in _SPARED:
            try:
                with open(f"/proc/{name}/comm") as fh:
                    found.append(f"{name}:{fh.read().strip()}")
            except OSError:
                found.append(name)
    return found


def do_keep(req: dict) -> tuple[dict, list[bytes]]:
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            os.closerange(3, 65536)
            os.chdir("/tmp")
            pid1.set_rlimits(_rlimits(req["rlimits"]))
            os.execve(req["argv"][0], req["argv"], req["env"])
        except BaseException as exc:  # noqa: BLE001 - report and die, never return into PID 1's loop
            os.write(2, f"session: cannot start the kept process: {exc}\n".encode())
        finally:
            os._exit(127)
    os.close(out_w)
    _SPARED.add(pid)
    output = CappedOutput({out_r: int(req["output_bytes"])})
    deadline = time.monotonic() + float(req["timeout_s"])
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([out_r], [], [], min(left, 0.5))
        if ready and not output.read(out_r):
            break
    os.close(out_r)
    done = _exited(pid)
    if timed_out or done is not None:  # no longer spared: what it started dies with the next command's end
        _SPARED.discard(pid)
    if timed_out and done is None:
        reap.kill_children(spare=frozenset(_SPARED))
    exit_code = os.WEXITSTATUS(done) if done is not None and os.WIFEXITED(done) else None
    return {"running": done is None and not timed_out, "exit_code": exit_code, "timed_out": timed_out}, \
        [output.bytes(out_r)]


def _exited(pid: int) -> int | None:
    """The wait status of a process that closed its output, once it has exited (a moment's grace:
    closing them may be its last act), else None."""
    for _ in range(20):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.01)
    return None


def do_read(req: dict) -> tuple[dict, list[bytes]]:
    fd = os.open(req["path"], os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return {"error_kind": "not_a_file", "message": f"{req['path']} is not a regular file"}, []
        data = os.read(fd, int(req["max_bytes"]) + 1)
    finally:
        os.close(fd)
    limit = int(req["max_bytes"])
    return {"size": st.st_size, "truncated": len(data) > limit}, [data[:limit]]


def do_write(req: dict, data: bytes) -> tuple[dict, list[bytes]]:
    path = req["path"]
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_NOCTTY, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {"error_kind": "not_a_file", "message": f"{path} is not a regular file"}, []
        write_all(fd, data)
    finally:
        os.close(fd)
    return {"size": len(data)}, []


def do_listdir(req: dict) -> tuple[dict, list[bytes]]:
    entries = []
    with os.scandir(req["path"]) as it:
        for entry in it:
            entries.append([entry.name, entry.is_dir(follow_symlinks=False)])
    entries.sort()
    return {"entries": entries[: int(req["max_entries"])], "truncated": len(entries) > int(req["max_entries"])}, []


def do_forward(req: dict) -> tuple[dict, list[bytes]]:
    """Start the relay 127.0.0.1:port -> the bound unix socket, in a process of its own."""
    import socket  # here, not at the top: most episodes have no gateway, and it costs PID 1's start

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(req["port"])))
    listener.listen(128)
    pid = os.fork()
    if pid == 0:
        try:
            _relay(listener, req["socket"])
        finally:
            os._exit(0)
    listener.close()
    _SPARED.add(pid)
    return {"pid": pid}, []


def _relay(listener, target: str) -> None:  # type: ignore[no-untyped-def]
    import socket

    pairs: dict = {}
    while True:
        ready, _, _ = select.select([listener, *pairs], [], [])
        for sock in ready:
            if sock is listener:
                client, _ = listener.accept()
                upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    upstream.connect(target)
                except OSError:
                    client.close()
                    upstream.close()
                    continue
                pairs[client], pairs[upstream] = upstream, client
                continue
            other = pairs.get(sock)
            if other is None:
                continue
            try:
                data = sock.recv(1 << 16)
                if data:
                    other.sendall(data)
                    continue
            except OSError:
                pass
            for s in (sock, other):
                pairs.pop(s, None)
                s.close()


def _os_error(header: dict, exc: Exception) -> tuple[dict, list[bytes]]:
    """A path the agent's files make impossible is the caller's answer, not a crash; anything
    else is ours, and ends PID 1 (the host sees a failed session)."""
    if not isinstance(exc, OSError):
        raise exc
    return {"error_kind": "os_error", "message": f"{exc.strerror or exc}: {header.get('path', '')}"}, []


def serve() -> None:
    pid1.make_private()
    pid1.serve({"exec": lambda h, b: do_exec(h, b[0] if b else b""), "read": lambda h, b: do_read(h),
                "write": lambda h, b: do_write(h, b[0] if b else b""), "listdir": lambda h, b: do_listdir(h),
                "forward": lambda h, b: do_forward(h), "keep": lambda h, b: do_keep(h)}, _os_error, fd_in=PROTO_IN, fd_out=PROTO_OUT)

if __name__ == "__main__":
    serve()
