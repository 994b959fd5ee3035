"""The runner: a slot's PID 1, which runs a submission's tests under their limits (stdlib only).

Theory of operation
-------------------
The engine starts one runner per slot, inside bubblewrap's namespaces, as PID 1 of the slot's pid
namespace, uid 65534, no capabilities, under the seccomp filter. The runner never runs model code
and never forks per test: it starts the slot's zygotes (``zygote.py``), small fork servers, and
asks one of them for a fresh child per test (the warm one, which holds the LiveCodeBench prelude's
modules, for Python programs that import anything; the lean one, which forks faster, for the
rest). The runner owns what a test's processes are given: the stdin
memfd (rewritten per test), the stdout/stderr/status pipes it drains under the output limits, and
the work dir, recreated from the prepared files before every test, so no state carries from one
test to the next. It enforces the wall-time, output and (without cgroups) memory limits by killing
the test process; the zygote then reaps it, kills everything else the test started and reports the
wait status and usage. Programs cannot signal PID 1; they can signal the zygote, and when it dies
the runner adopts the test process (orphans go to PID 1), ends the test itself, and starts a fresh
zygote for the next test.

Protocol with the engine (fds 10/11): ``frames``. Requests: ``prepare`` (language recipe +
files; compiles; answers with the compile record) and ``run_batch`` (per input: stdin, extra files,
fetch list; shared limits and an optional total budget), answered by one result frame per input as
each finishes, then ``done``; the engine may send ``stop`` meanwhile (its stop rule saw a failure)
and the rest come back skipped. Expected outputs never come here: judging happens outside. The slot
cgroup's OOM counter arrives as a read-only fd, so the runner can tell an out-of-memory kill from
other deaths.

Why this file is over 400 lines: what is left here is one class's state (the slot's zygotes, the
prepared submission, the output buffers, the per-test watch over pipes, timers and an adopted
orphan), which the split-off pieces (zygote_handle.py, status_rules.py, prelude_scan.py, and pid1.py,
frames.py and output_cap.py, shared with the session's PID 1) do not share.
"""

from __future__ import annotations

import dataclasses
import os
import select
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pid1  # noqa: E402 - the modules beside this file (``/coderl`` in the sandbox)
import reap  # noqa: E402
import wire  # noqa: E402
from frames import encode_frame, read_frame  # noqa: E402
from output_cap import CappedOutput  # noqa: E402
from prelude_scan import needs_prelude  # noqa: E402
from run_record import Limits, RunRecord, RunStatus  # noqa: E402
from status_rules import child_rlimits, compile_record, run_status  # noqa: E402
from wire import meta_packet, oom_kills, split_meta_packet, write_all  # noqa: E402
from workdir import WorkDir  # noqa: E402
from zygote_handle import ZYGOTE_START_S, ZygoteLost, ZygoteProcess  # noqa: E402

del sys.path[0]

PROTO_IN, PROTO_OUT = 10, 11
IN_ZYGOTE_COMPILE_BYTES = 256 * 1024  # bigger sources compile in a throw-away child
MARSHAL_OUTPUT_KB = 256 * 1024  # what that child may print: the marshalled code object
RESULTS_WAIT_S = 0.005
ZYGOTE_GRACE_S = 2.0  # after a kill, how long the zygote has to report before it counts as stuck
ADOPTED = "the program killed or stopped its parent, the sandbox's fork server"


class Runner:
    def __init__(self, box: str, scratch: list[str], pid_namespace: bool, oom_fd: int | None = None) -> None:
        self.oom_fd = oom_fd
        self.oom_kills = oom_kills(oom_fd)  # the slot cgroup's count after the last run
        self.work = WorkDir(box, scratch)
        self.pid_namespace = pid_namespace
        self.recipe: dict = {}
        self.prepared = False
        # What every test process is given; the read ends stay here (non-inheritable, non-blocking).
        self.stdin = os.memfd_create("stdin", 0)
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.status_r, status_w = os.pipe()
        for fd in (self.out_r, self.err_r, self.status_r):
            os.set_blocking(fd, False)
        fds = (self.stdin, out_w, err_w, status_w)
        self.zygotes = {flavor: ZygoteProcess(fds, box, flavor) for flavor in ("lean", "warm")}
        self.zygote = self.zygotes["warm"]  # the current submission's
        self.stop_seen = False  # the engine's protocol pipe became readable during a run: a stop frame
        self.cgroup_memory = False  # the slot cgroup enforces memory: no RSS polling of our own
        self.code_packet: bytes | None = None  # replayed to a fresh zygote: the submission's code
        self.job_packet: bytes | None = None  # ... and what its children are to be

    # -- the zygote
    def _zygote(self) -> ZygoteProcess:
        """The live zygote, restarted (and told the submission again) after a program killed it."""
        zygote = self.zygote
        if not zygote.alive:
            zygote.start()
            if self.code_packet is not None:
                zygote.send(b"S", self.code_packet)
                op, reply = zygote.answer(ZYGOTE_START_S)
                if op != b"C" or not split_meta_packet(reply)[0]["ok"]:
                    raise RuntimeError("a fresh zygote could not load the submission again")
            if self.job_packet is not None:
                zygote.send(b"J", self.job_packet)
        return zygote

    def _set_job(self, job: dict, limits: Limits) -> None:
        self.job_packet = meta_packet({**job, "rlimits": child_rlimits(limits, self.pid_namespace)})
        try:
            self._zygote().send(b"J", self.job_packet)
        except ZygoteLost:
            self.zygote.stop()  # the next run starts a fresh one, which is told the job

    # -- requests
    def _limits(self, header: dict) -> Limits:
        """A request's limits: the frame's dict (the engine's `Limits`, memory already raised by
        the language's overhead) read back, and whether the slot's cgroup enforces the memory."""
        self.cgroup_memory = bool(header["cgroup_memory"])
        return Limits.from_dict(header["limits"])

    def prepare(self, header: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
        self.recipe = header["recipe"]
        # a submission the compile cache answered brings its artifacts among its files
        self.work.prepare(dict(zip(header["files"], blobs, strict=True)), tuple(self.recipe.get("executables", ())))
        self.prepared = False
        self.code_packet = self.job_packet = None
        self.zygote = self.zygotes[self._flavor()]
        self.zygote.check()
        limits = self._limits(header)
        if self.recipe.get("warm_python"):
            reply, out_blobs = self._prepare_python(limits)
        elif not self.recipe.get("compile"):
            reply, out_blobs = {"ok": True}, []
        else:
            reply, out_blobs = self._compile(limits)
        self.prepared = reply["ok"]
        return reply, out_blobs

    def _flavor(self) -> str:
        """The warm zygote (it holds the prelude's modules) for Python that imports anything (a
        false "import" in a string only costs speed) or needs the LiveCodeBench prelude; the
        lean one, which forks faster, for the rest. A prelude asked for but not needed is left out
        and only its two limits kept (``needs_prelude``)."""
        if not self.recipe.get("warm_python"):
            return "lean"
        source = self.work.files[self.recipe["source"]]
        if b"import" in source:
            return "warm"
        names = self.zygotes["warm"].prelude_names
        return "warm" if self.recipe.get("prelude") and (not names or needs_prelude(source, names)) else "lean"

    def _compile(self, limits: Limits) -> tuple[dict, list[bytes]]:
        """Run the compiler; on success its artifacts join the submission's files. With
        ``return_artifacts`` (the engine's compile cache) the reply carries them too: their names
        (``artifacts``, ``executables``) and bytes after the compiler's stdout and stderr."""
        self._set_job({"kind": "exec", "argv": self.recipe["compile"], "env": self.recipe.get("env", {})}, limits)
        before = dict(self.work.files)
        record, out, err, _ = self._run_one(b"", {}, limits)
        ok = record.status is RunStatus.OK and record.exit_code == 0
        if ok:
            for rel in self.recipe.get("artifacts", []):
                if not self.work.keep(rel):
                    ok = False
                    err += f"\ncompiler produced no {rel}".encode()
        self.work.wipe()
        reply = {"ok": ok, "run": record.to_wire()}
        if ok and self.recipe.get("return_artifacts"):
            made = [rel for rel, data in self.work.files.items() if before.get(rel) is not data]
            reply.update(artifacts=made, executables=sorted(self.work.executables.intersection(made)))
            return reply, [out, err, *(self.work.files[rel] for rel in made)]
        return reply, [out, err]

    def _prepare_python(self, limits: Limits) -> tuple[dict, list[bytes]]:
        """Compile once, in the zygote: every test forks from a process that holds the code object.
        A big source compiles in a throw-away child first, and the code comes back marshalled."""
        name = self.recipe["source"]
        source = self.work.files[name]
        prelude = bool(self.recipe.get("prelude"))
        warm = self.zygote is self.zygotes["warm"]
        meta = {"filename": "/box/" + name, "prelude": prelude and warm, "prelude_limits": prelude and not warm}
        if len(source) <= IN_ZYGOTE_COMPILE_BYTES:
            # The parser reads a syntax error's line from the file it is named after, so that file
            # must be this source, not the last submission's work dir.
            self.work.materialise({})
            packet = meta_packet({**meta, "form": "source"}, source)
        else:
            self._set_job({"kind": "compile_python", "source": name, "filename": meta["filename"]}, limits)
            record, out, err, _ = self._run_one(b"", {}, limits.replace(stdout_kb=MARSHAL_OUTPUT_KB))
            self.work.wipe()
            if record.status is not RunStatus.OK or not out.startswith(b"C"):
                return {"ok": False, "run": record.to_wire()}, [b"", out[1:] if out.startswith(b"E") else err]
            packet = meta_packet({**meta, "form": "marshal"}, out[1:])
        started = time.monotonic()
        try:
            zygote = self._zygote()
            zygote.send(b"S", packet)
            op, reply = zygote.answer(ZYGOTE_START_S)
        except ZygoteLost:  # the compiler itself blew up on this source
            self.zygote.stop()
            message = b"compiling the program crashed the interpreter\n"
            record = compile_record(RunStatus.RUNTIME_ERROR, time.monotonic() - started)
            return {"ok": False, "run": record.to_wire()}, [b"", message]
        result, _ = split_meta_packet(reply)
        if op != b"C":
            raise RuntimeError(f"zygote answered {op!r} to a load")
        if not result["ok"]:
            record = compile_record(RunStatus.RUNTIME_ERROR, result["seconds"])
            return {"ok": False, "run": record.to_wire()}, [b"", result["message"].encode("utf-8", "replace")]
        self.code_packet = packet
        return {"ok": True, "run": compile_record(RunStatus.OK, result["seconds"]).to_wire()}, [b"", b""]

    def run_batch(self, header: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
        """Run every input in order, streaming one result frame each; a ``stop`` frame from the
        engine (or the spent budget) turns the rest into skipped records. Ends with ``done``."""
        limits = self._limits(header)
        budget = header.get("budget_s")
        started = time.monotonic()
        stopped = ""
        pos = 0
        self.stop_seen = False
        outbox = _Outbox()
        if not self.prepared:
            stopped = "compile error"
        elif self.recipe.get("warm_python"):
            self._set_job({"kind": "python"}, limits)
        else:
            self._set_job({"kind": "exec", "argv": self.recipe["run"], "env": self.recipe.get("env", {})}, limits)
        for index, run in enumerate(header["runs"]):
            stdin = blobs[pos]
            files = dict(zip(run["files"], blobs[pos + 1:pos + 1 + len(run["files"])], strict=True))
            pos += 1 + len(run["files"])
            if not stopped and self.stop_seen and _stop_requested():
                stopped = "stopped after an earlier failure"
            run_limits = limits
            if not stopped and budget is not None:
                left = budget - (time.monotonic() - started)
                if left <= 0:
                    stopped = f"total time budget {budget} s spent"
                else:
                    run_limits = limits.replace(wall_s=min(limits.wall_s, max(left, 0.05)))
            if stopped:
                outbox.add(encode_frame({"index": index, "status": RunStatus.SKIPPED, "message": stopped}), urgent=False)
                continue
            record, out, err, fetched = self._run_one(stdin, files, run_limits, fetch=run.get("fetch", []))
            header = {**record.to_wire(), "index": index, "fetch_names": list(fetched)}
            outbox.add(encode_frame(header, [out, err, *fetched.values()]), urgent=record.status is not RunStatus.OK)
        outbox.flush()
        return {"done": True}, []

    # -- one test
    def _run_one(self, stdin: bytes, files: dict, limits: Limits,  # type: ignore[no-untyped-def]
                 *, fetch=()) -> tuple[RunRecord, bytes, bytes, dict[str, bytes]]:
        """One test: its record, its stdout and stderr, and the files fetched after it."""
        self.work.materialise(files)
        os.ftruncate(self.stdin, 0)
        _pwrite_all(self.stdin, stdin)
        os.lseek(self.stdin, 0, os.SEEK_SET)  # the offset the test process shares with us
        start = time.monotonic()
        # A zygote a program killed is gone by now: stopped while its test ran (_watch), or found
        # by check() before the submission began; a send that still fails is ours (sandbox error).
        self._zygote().send(b"R")
        record, lost, out, err = self._watch(limits, start)
        markers = self.recipe.get("memory_error_markers", [])
        if record.status is RunStatus.RUNTIME_ERROR and any(m.encode() in err for m in markers):
            record = dataclasses.replace(record, status=RunStatus.MEMORY_LIMIT,
                                         message=f"memory limit {limits.memory_mb} MiB exceeded (runtime out of heap)")
        kills = oom_kills(self.oom_fd)
        # An OOM kill during the test is the test's doing, even when the kernel took the zygote.
        if kills > self.oom_kills and (record.status is not RunStatus.OK or lost):
            record = dataclasses.replace(record, status=RunStatus.MEMORY_LIMIT,
                                         message=f"memory limit {limits.memory_mb} MiB exceeded (out-of-memory kill)")
        self.oom_kills = kills
        return record, out, err, self.work.fetch(list(fetch)) if fetch else {}

    def _watch(self, limits: Limits, start: float) -> tuple[RunRecord, bool, bytes, bytes]:
        """Drain the test's output under its limits until the zygote reports the exit (or, when the
        zygote is lost, until the adopted test process exits). Returns the record, whether the
        zygote was lost, stdout and stderr."""
        zygote = self.zygote
        events = zygote.events
        output = CappedOutput({self.out_r: limits.stdout_kb * 1024, self.err_r: limits.stderr_kb * 1024},
                               self.status_r)
        poller = select.poll()
        for fd in (self.out_r, self.err_r, self.status_r, events):
            poller.register(fd, select.POLLIN)
        if not self.stop_seen:
            poller.register(PROTO_IN, select.POLLIN)
        deadline = start + limits.wall_s
        rss_limit_kb = None if self.cgroup_memory else limits.memory_mb * 1024
        pid: int | None = None
        exited: tuple | None = None
        killed_for = None
        give_up_at = None  # once the test is killed: when a silent zygote counts as stuck
        adopted = None  # a pidfd on the test process, once the zygote is lost
        lost = done = False
        peak_poll_kb = 0
        while not done:
            now = time.monotonic()
            if killed_for is None and now >= deadline:
                killed_for = "wall"
            if killed_for is not None and give_up_at is None:
                give_up_at = now + ZYGOTE_GRACE_S
                if pid is not None:
                    _kill_test(pid)
            if give_up_at is not None and now >= give_up_at:
                if lost:
                    break
                lost, (pid, adopted) = True, self._adopt(pid, poller)
                if adopted is None:
                    break
                give_up_at = now + ZYGOTE_GRACE_S
            wait_s = (deadline if give_up_at is None else give_up_at) - now
            if rss_limit_kb:
                wait_s = min(wait_s, 0.01)
            for fd, _ev in poller.poll(max(wait_s, 0) * 1000 + 1):
                if fd == events and not lost:
                    try:
                        for op, payload in zygote.read_ready():
                            if op == b"F":
                                (pid,) = wire.FORKED.unpack(payload)
                                if killed_for is not None:
                                    _kill_test(pid)
                            elif op == b"X":
                                exited, done = wire.EXITED.unpack(payload), True
                    except ZygoteLost:
                        lost, (pid, adopted) = True, self._adopt(pid, poller)
                        done = adopted is None
                        break
                elif fd == adopted:
                    exited, done = _reap_adopted(pid), True
                elif fd == PROTO_IN:  # read between tests (run_batch), not now
                    self.stop_seen = True
                    poller.unregister(PROTO_IN)
                elif fd != events:
                    output.read(fd)
            if output.truncated[self.out_r] and killed_for is None:
                killed_for = "output"
            if rss_limit_kb and pid is not None and killed_for is None and not done:
                rss = _namespace_rss_kb(pid, self.pid_namespace, [z.pid for z in self.zygotes.values()])
                peak_poll_kb = max(peak_poll_kb, rss)
                if rss > rss_limit_kb:
                    killed_for = "memory"
        if lost:
            if adopted is not None:
                os.close(adopted)
            self._kill_everything()
        output.drain()
        wall_s = round(time.monotonic() - start, 6)
        facts = {"exit_code": None, "signal": None, "memory_error": wire.STATUS_MEMORY_ERROR in output.status}
        if exited is None:  # the zygote took the exit status with it
            facts.update(cpu_s=0.0, memory_kb=peak_poll_kb)
            status, kind, message = run_status(facts, killed_for, limits) if killed_for else (
                RunStatus.RUNTIME_ERROR, None, "")
        else:
            wait_status, utime, stime, maxrss = exited
            facts.update(cpu_s=round(utime + stime, 6), memory_kb=max(int(maxrss), peak_poll_kb))
            if os.WIFEXITED(wait_status):
                facts["exit_code"] = os.WEXITSTATUS(wait_status)
            elif os.WIFSIGNALED(wait_status):
                facts["signal"] = os.WTERMSIG(wait_status)
            status, kind, message = run_status(facts, killed_for, limits)
        record = RunRecord(status=status, exit_code=facts["exit_code"], signal=facts["signal"], time_limit_kind=kind,
                           cpu_s=facts["cpu_s"], wall_s=wall_s,
                           memory_kb=facts["memory_kb"], stdout_truncated=output.truncated[self.out_r],
                           stderr_truncated=output.truncated[self.err_r], message=message or (ADOPTED if lost else ""))
        return record, lost, output.bytes(self.out_r), output.bytes(self.err_r)

    def _adopt(self, pid: int | None, poller: select.poll) -> tuple[int | None, int | None]:
        """The zygote is gone or stuck: stop it for good, and wait for the test process ourselves
        (PID 1 inherits it). Returns its pid and a pidfd to poll, or a None pidfd when there is
        nothing to wait for."""
        poller.unregister(self.zygote.events)
        self.zygote.stop()  # reaped, so its orphans are ours now
        if pid is None:  # it died before it named the test process (the test may have killed it first)
            pid = reap.oldest_child(spare=self._live_zygotes())
            if pid is None:
                return None, None
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return pid, None
        poller.register(pidfd, select.POLLIN)
        return pid, pidfd

    def _kill_everything(self) -> None:
        """After a lost zygote: what it would have done. Its test processes are ours now (PID 1,
        and a child subreaper without a pid namespace); the live zygotes are spared."""
        reap.kill_children(spare=self._live_zygotes())

    def _live_zygotes(self) -> frozenset[int]:
        return frozenset(z.pid for z in self.zygotes.values() if z.pid is not None)


class _Outbox:
    """Result frames for the engine, written a few at a time: every write wakes the engine up.
    A frame waits at most RESULTS_WAIT_S, which only delays the engine's stop rule (the judge
    ignores runs after the first failure anyway); a failed run's goes out at once."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.since = 0.0

    def add(self, frame: bytes, *, urgent: bool) -> None:
        if not self.frames:
            self.since = time.monotonic()
        self.frames.append(frame)
        if urgent or time.monotonic() - self.since >= RESULTS_WAIT_S:
            self.flush()

    def flush(self) -> None:
        if self.frames:
            write_all(PROTO_OUT, b"".join(self.frames))
            self.frames = []


def _pwrite_all(fd: int, data: bytes) -> None:
    view, offset = memoryview(data), 0
    while offset < len(data):
        offset += os.pwrite(fd, view[offset:], offset)


def _kill_test(pid: int) -> None:
    """SIGKILL the test process; its zygote then kills the rest."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


def _reap_adopted(pid: int | None) -> tuple | None:
    """The exit of a test process we adopted (PID 1); None when it is not ours to reap (no pid
    namespace) or already gone."""
    try:
        _, wait_status, usage = os.wait4(pid, os.WNOHANG)  # type: ignore[arg-type]
    except ChildProcessError:
        return None
    return wait_status, usage.ru_utime, usage.ru_stime, usage.ru_maxrss


def _stop_requested() -> bool:
    """Has the engine sent a ``stop`` frame? (Checked between runs, never blocks.)"""
    ready, _, _ = select.select([PROTO_IN], [], [], 0)
    if not ready:
        return False
    header, _ = read_frame(PROTO_IN)
    return header.get("op") == "stop"


def _namespace_rss_kb(pid: int, pid_namespace: bool, zygotes: list[int | None]) -> int:
    """Sum of resident memory of the test's processes (fallback when no cgroup is available)."""
    ours = {"1", *map(str, zygotes)}
    pids = [p for p in os.listdir("/proc") if p.isdigit() and p not in ours] if pid_namespace else [str(pid)]
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
        except (OSError, ValueError, IndexError):
            continue
    return total


def main() -> None:
    box, *scratch = sys.argv[1].split(":")
    pid_namespace = sys.argv[2] == "pidns"
    oom_fd = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] != "-" else None
    os.dup2(0, PROTO_IN)
    os.dup2(1, PROTO_OUT)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    pid1.make_private(subreaper=True)  # a lost zygote's test processes become ours
    runner = Runner(box, scratch, pid_namespace, oom_fd)
    for zygote in runner.zygotes.values():
        zygote.start()
    pid1.serve({"prepare": runner.prepare, "run_batch": runner.run_batch,
                "stop": None},  # a stop that arrived after its batch had already finished
               _runner_error, fd_in=PROTO_IN, fd_out=PROTO_OUT)


def _runner_error(header: dict, exc: Exception) -> tuple[dict, list[bytes]]:
    """Any failure of a request is the runner's: the engine turns it into sandbox_error records."""
    return {"error": f"{type(exc).__name__}: {exc}"}, []


if __name__ == "__main__":
    main()
