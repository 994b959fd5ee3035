"""Every execution item of ../shared/reference/threats.md as a real program in the real sandbox.

Each test asserts the true outcome (status), and the session-wide `test_nothing_left_behind`
checks that no process, file or cgroup survives."""

from __future__ import annotations

import os
import socket

import pytest

from coderl.cache import default_cache_dir
from coderl.sandbox import RunStatus

OK, RE, TLE, MLE, OLE = (RunStatus.OK, RunStatus.RUNTIME_ERROR, RunStatus.TIME_LIMIT,
                         RunStatus.MEMORY_LIMIT, RunStatus.OUTPUT_LIMIT)


# A program's view of the processes in its sandbox other than itself and ours (runner, zygotes).
OTHERS = ("def others():\n    import os\n    found = []\n    for p in os.listdir('/proc'):\n"
          "        if p.isdigit() and int(p) != os.getpid():\n"
          "            if b'/coderl/' not in open(f'/proc/{p}/cmdline', 'rb').read():\n"
          "                found.append(p)\n    return found")


# A fork bomb, and a program that leaves one running behind it and exits.
FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
LEFT_BEHIND = ("import os\nif os.fork() == 0:\n" + "\n".join("    " + line for line in FORK_BOMB.splitlines())
               + "\nprint('bye')")


def one(ex):
    assert ex.compile is None or ex.compile.ok, ex.compile
    (result,) = ex.results
    return result


# ---------------------------------------------------------------- resource abuse
def test_infinite_loop_is_cpu_time_limit(run):
    # wall_s is only the backstop here: on 2 cores at load 15 (a full run with other jobs) the loop got
    # 1 s of CPU in more than 5 s of wall time and was stopped by the wall clock (kind "wall")
    r = one(run("while True: pass", cpu_s=1, wall_s=60))
    assert r.status is TLE and r.time_limit_kind == "cpu", (r.status, r.time_limit_kind, r.cpu_s, r.wall_s)
    # rusage is tick-sampled: on a loaded VM it can read below the kernel's own CPU clock
    assert 0.5 <= r.cpu_s <= 2.5


def test_loop_ignoring_signals_and_catching_base_exception(run):
    src = ("import signal\nfor s in (signal.SIGALRM, signal.SIGTERM, signal.SIGXCPU, signal.SIGINT):\n"
           "    signal.signal(s, signal.SIG_IGN)\n"
           "while True:\n    try:\n        pass\n    except BaseException:\n        pass\n")
    r = one(run(src, cpu_s=1, wall_s=5))
    assert r.status is TLE


def test_sleep_is_wall_time_limit(run):
    r = one(run("import time\ntime.sleep(60)", cpu_s=1, wall_s=1))
    assert r.status is TLE and r.time_limit_kind == "wall"
    assert r.wall_s < 3


def test_busy_threads(run):
    src = ("import threading\ndef spin():\n    while True: pass\n"
           "for _ in range(4): threading.Thread(target=spin, daemon=True).start()\nspin()\n")
    assert one(run(src, cpu_s=1, wall_s=4)).status is TLE


def test_memory_bomb_is_memory_limit(run):
    r = one(run("x = bytearray(1 << 30)\nx[::4096] = b'x' * len(x[::4096])\nprint('survived')", memory_mb=128))
    assert r.status is MLE, r
    assert b"survived" not in r.stdout


def test_slow_leak_is_memory_limit(run):
    src = "chunks = []\nwhile True:\n    chunks.append(b'x' * (1 << 20))\n"
    r = one(run(src, memory_mb=64, cpu_s=4, wall_s=8))
    assert r.status is MLE, r


def test_huge_single_allocation_memory_error_is_memory_limit(run):
    assert one(run("x = [0] * (10 ** 11)", memory_mb=128)).status is MLE


def test_tmpfs_and_shm_files_count_as_memory(run):
    src = ("f = open('/dev/shm/x', 'wb')\nfor _ in range(400):\n    f.write(b'x' * (1 << 20))\n    f.flush()\n")
    r = one(run(src, memory_mb=64, file_size_kb=1 << 20))
    assert r.status in (MLE, RE), r  # MLE by the cgroup, or ENOSPC from the capped shm tmpfs
    assert r.status is not OK


def test_numpy_style_thread_creation_is_not_broken_by_memory_limit(run):
    src = "import threading\nts=[threading.Thread(target=lambda: None) for _ in range(16)]\n" \
          "[t.start() for t in ts]\n[t.join() for t in ts]\nprint('ok')"
    r = one(run(src, memory_mb=64))
    assert r.status is OK and r.stdout == b"ok\n"


def test_deep_recursion_is_runtime_error_not_crash(run, engine):
    src = "import sys\nsys.setrecursionlimit(10**7)\ndef f(n): return f(n+1)\nf(0)"
    r = one(run(src, memory_mb=256))
    assert r.status in (RE, MLE)
    assert one(run("print(1)")).status is OK  # the slot survived


def test_fork_bomb(run):
    r = one(run(FORK_BOMB, cpu_s=1, wall_s=3, max_processes=32))
    assert r.status is TLE, r  # never a sandbox error: the bomb is killed whole, however fast it refills
    assert one(run("print(1)")).stdout == b"1\n"
    ex = run(LEFT_BEHIND, b"", b"", max_processes=16)
    assert [(r.status, r.stdout) for r in ex.results] == [(OK, b"bye\n")] * 2
    assert one(run(f"{OTHERS}\nprint(others())")).stdout == b"[]\n"


def test_a_fork_bomb_left_behind_never_reaches_the_next_submission():
    """One slot, so that the next submission runs where the bomb was. Killing a bomb reads the
    process tree while its processes are re-parented, and a listing can miss one: before the fork
    server looked again for a child still alive, about 1 round in 10 left a bomb process running
    into the next submission (seen by it, or filling the process limit so that it could not start)."""
    from coderl.sandbox import Limits, Program
    from coderl.sandbox.blocking import BlockingEngine

    with BlockingEngine(slots=1) as engine:
        for _ in range(100):
            ex = engine.execute(Program("python", LEFT_BEHIND), [b"", b""], Limits(cpu_s=2, wall_s=4, max_processes=16))
            assert [(r.status, r.stdout) for r in ex.results] == [(OK, b"bye\n")] * 2
            assert one(engine.execute(Program("python", f"{OTHERS}\nprint(others())"), [b""])).stdout == b"[]\n"


def test_thread_bomb(run):
    src = ("import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(100,), "
           "daemon=True).start()\n")
    r = one(run(src, cpu_s=1, wall_s=3, max_processes=16))
    assert r.status is RE, r


def test_output_flood_is_output_limit(run):
    r = one(run("import sys\nwhile True: sys.stdout.write('x' * 65536)", stdout_kb=1024))
    assert r.status is OLE and r.stdout_truncated
    assert len(r.stdout) == 1024 * 1024


def test_output_without_newline_and_binary_garbage(run):
    r = one(run("import sys, os\nsys.stdout.buffer.write(bytes(range(256)) * 4 + b'\\xff\\xfe')"))
    assert r.status is OK and r.stdout == bytes(range(256)) * 4 + b"\xff\xfe"
    assert r.to_dict()["stdout"].endswith("\ufffd\ufffd")


def test_large_output_is_complete_not_false_timeout(run):
    r = one(run("print('y' * 1_000_000)"))  # SandboxFusion truncated or timed out on this
    assert r.status is OK and len(r.stdout) == 1_000_001


def test_stderr_flood_is_truncated_not_killed(run):
    r = one(run("import sys\nsys.stderr.write('e' * 5_000_000)\nprint('done')", stderr_kb=64))
    assert r.status is OK and r.stderr_truncated and r.stdout == b"done\n"


def test_disk_fill_is_bounded(run):
    src = "f = open('big', 'wb')\nwhile True:\n    f.write(b'x' * (1 << 20))\n"
    r = one(run(src, memory_mb=512, file_size_kb=8 * 1024))
    assert r.status in (OLE, RE, MLE) and r.status is not OK


def test_many_files(run):
    src = "import os\nfor i in range(100000):\n    open(f'f{i}', 'w').close()\nprint('ok')"
    r = one(run(src, cpu_s=3, wall_s=6))
    assert r.status in (OK, RE, TLE, MLE)
    assert one(run("import os\nprint(os.listdir('.'))")).stdout == b"['main.py']\n"  # and gone after


def test_very_long_path(run):
    r = one(run("import os\nos.makedirs('/'.join(['d' * 200] * 100))"))
    assert r.status is RE  # ENAMETOOLONG, a clean runtime error


def test_fd_exhaustion(run):
    r = one(run("fs=[]\nwhile True: fs.append(open('/dev/null'))", open_files=64))
    assert r.status is RE and b"Too many open files" in r.stderr


def test_no_host_fds_inherited(run):
    src = "import os\nprint(sorted(int(f) for f in os.listdir('/proc/self/fd')))"
    # stdin, stdout, stderr, the runner's status pipe (3) and listdir's own fd (4)
    assert one(run(src)).stdout == b"[0, 1, 2, 3, 4]\n"


# ---------------------------------------------------------------- escape and exfiltration
def test_runs_unprivileged_without_capabilities(run):
    src = ("import os\nprint(os.getuid(), os.geteuid(), os.getgid())\n"
           "print([l for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm', 'NoNewPrivs', 'Seccomp:'))])")
    out = one(run(src)).stdout.decode()
    assert out.startswith("65534 65534 65534")
    assert "CapEff:\\t0000000000000000" in out and "CapPrm:\\t0000000000000000" in out
    assert "NoNewPrivs:\\t1" in out and "Seccomp:\\t2" in out


def test_no_network_to_host_services(run):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)  # the kernel completes a connection without accept(): checked after the run
    port = server.getsockname()[1]
    # The way out is checked without sending anything off this machine even if the boundary were
    # broken: the host's own loopback server, then no route and no resolver to reach anything else.
    src = (f"import os, socket\ns = socket.socket()\ns.settimeout(1)\n"
           f"try:\n    s.connect(('127.0.0.1', {port}))\n    print('CONNECTED')\nexcept OSError as e:\n    print('refused', e)\n"
           "routes = [l for l in open('/proc/net/route').read().splitlines()[1:] if l.strip()]\n"
           "routes6 = [l for l in open('/proc/net/ipv6_route').read().splitlines() if not l.rstrip().endswith('lo')]\n"
           "print('ROUTES' if routes or routes6 else 'no route')\n"
           "print('RESOLVER' if os.path.exists('/etc/resolv.conf') else 'no resolver')\n")
    out = one(run(src)).stdout.decode()
    try:
        with pytest.raises(BlockingIOError):  # nothing waiting in the backlog: no connection was made
            server.accept()[0].close()
    finally:
        server.close()
    assert "CONNECTED" not in out and "no route" in out and "no resolver" in out, out


def test_only_loopback_interface(run):
    out = one(run("import socket\nprint(sorted(n for _, n in socket.if_nameindex()))")).stdout
    assert out == b"['lo']\n"


def test_raw_socket_denied(run):
    src = "import socket\ntry:\n    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n    print('RAW')\nexcept OSError as e:\n    print('denied')"
    assert one(run(src)).stdout == b"denied\n"


def test_host_secrets_are_absent(run, tmp_path):
    """The host's cache directory too (a home directory's, or a checkout's where CODERL_CACHE points
    into one): the C++ headers and JVM archives prebuilt there are bound under /coderl/toolchain
    (tests/sandbox/test_prebuilt.py shows a cache under /var/tmp not showing while both are used)."""
    cache = str(default_cache_dir().absolute())
    src = ("import os\nfor p in ('/etc/shadow', '/etc/passwd', '/root/.ssh', '/proc/1/environ', '/home', '/work', "
           f"{cache!r}):\n    print(p, os.path.exists(p))\nprint(dict(os.environ))")
    out = one(run(src)).stdout.decode()
    assert "/etc/shadow False" in out and "/etc/passwd False" in out and "/root/.ssh False" in out
    assert "/work False" in out and f"{cache} False" in out
    assert "SECRET" not in out and "/work/main" not in out


def test_proc_shows_only_the_sandbox(run):
    src = "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    pids = eval(one(run(src)).stdout)
    assert pids[0] == 1 and len(pids) <= 4  # the runner (1), the two fork servers and the program itself
    assert one(run(f"{OTHERS}\nprint(others())")).stdout == b"[]\n"


def test_system_files_are_read_only(run):
    src = ("import os\nfor p in ('/usr/bin/evil', '/etc/evil', '/evil', '/coderl/runner.py'):\n"
           "    try:\n        open(p, 'w').write('x')\n        print('WROTE', p)\n    except OSError as e:\n        print('denied', p)")
    out = one(run(src)).stdout.decode()
    assert "WROTE" not in out


def test_symlink_and_hardlink_tricks(run):
    src = ("import os\nos.symlink('/etc/hostname', 'l')\nprint(os.path.exists('l'))\n"
           "try:\n    os.link('/usr/bin/python3', 'h')\n    print('LINKED')\nexcept OSError:\n    print('nolink')")
    out = one(run(src)).stdout.decode()
    assert "LINKED" not in out


@pytest.mark.parametrize("call", [
    "libc.ptrace(16, 1, 0, 0)",  # PTRACE_ATTACH to the runner
    "libc.unshare(0x10000000)",  # CLONE_NEWUSER
    "libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)",
    "libc.syscall(321, 0, 0, 0)",  # bpf
    "libc.syscall(298, 0, 0, -1, -1, 0)",  # perf_event_open
    "libc.syscall(250, 0, 0, 0)",  # keyctl
    "libc.syscall(310, 1, 0, 0, 0, 0, 0)",  # process_vm_readv
    "libc.syscall(323, 0)",  # userfaultfd
    "libc.syscall(425, 1, 0)",  # io_uring_setup
    "libc.personality(0x0040000)",  # ADDR_NO_RANDOMIZE
    "libc.chroot(b'/tmp')",
    "libc.syscall(308, 0, 0)",  # setns
])
def test_kernel_surface_denied(run, call):
    src = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
           f"r = {call}\nprint(r, os.strerror(ctypes.get_errno()))")
    out = one(run(src)).stdout.decode()
    assert out.startswith("-1 ") and ("Operation not permitted" in out or "Function not implemented" in out), out


def test_read_runner_memory_denied(run):
    src = "try:\n    open('/proc/1/mem', 'rb').read(1)\n    print('READ')\nexcept OSError as e:\n    print('denied')"
    assert one(run(src)).stdout == b"denied\n"


def test_killing_the_parent_does_nothing(run):
    r = one(run("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(1, 9)\nprint('still here')"))
    assert r.stdout == b"still here\n"
    assert one(run("print(2)")).stdout == b"2\n"


def test_killing_the_fork_server_mid_batch_loses_no_test(run):
    """The fork server (the program's parent) is not PID 1, so a program can kill it: the runner
    adopts the program, finishes its test, and a fresh fork server runs the rest of the batch."""
    src = "import os, signal\nx = input()\nos.kill(os.getppid(), signal.SIGKILL)\nprint(x)"
    ex = run(src, b"a\n", b"b\n", b"c\n")
    assert [(r.status, r.stdout) for r in ex.results] == [(OK, b"a\n"), (OK, b"b\n"), (OK, b"c\n")]
    grandchild = ("import os, signal, time\nserver = os.getppid()\nif os.fork() == 0:\n"
                  "    os.setsid()\n    os.kill(server, signal.SIGKILL)\n    time.sleep(5)\n"
                  "time.sleep(0.1)\nprint(input())")
    ex = run(grandchild, b"1\n", b"2\n", wall_s=2)
    assert [r.stdout for r in ex.results] == [b"1\n", b"2\n"]
    ex = run("import os\nos.kill(-1, 9)\nprint(input())", b"5\n", b"6\n")  # both fork servers at once
    assert [(r.status, r.stdout) for r in ex.results] == [(OK, b"5\n"), (OK, b"6\n")]
    assert one(run("print(3)")).stdout == b"3\n"
    assert one(run("import math\nprint(math.gcd(4, 6))")).stdout == b"2\n"


def test_a_program_that_kills_the_fork_server_and_exits_at_once_keeps_its_exit_status(engine):
    """The fork server, woken in its wait by the program's SIGKILL, must not reap the program that
    exited meanwhile (its status would die with it), and a program that kills it before it names the
    program is found among its orphans. With more submitters than CPUs, so that the server is not
    always running, about 6% of such runs came back as runtime errors without the first; without
    the second, this test failed 8 times in 20."""
    import asyncio

    from coderl.sandbox import Limits, Program

    src = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint(input())"
    inputs = [f"{i}\n".encode() for i in range(25)]

    async def submitters():
        return await asyncio.gather(*(engine.engine.execute(Program("python", src), inputs, Limits(memory_mb=256))
                                      for _ in range(4)))

    for ex in engine.call(submitters()):
        assert [(r.status, r.exit_code, r.stdout) for r in ex.results] == [(OK, 0, i) for i in inputs]


def test_stopping_the_fork_server_is_not_accepted_and_harms_nothing(run, engine):
    r = one(run("import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\nprint('stopped it')", wall_s=1))
    assert r.status is not OK
    assert one(run("print(4)")).stdout == b"4\n"
    # the other fork server, stopped by a program of one flavour, is noticed before the other's next use
    stop_all = ("import os, signal\nfor p in os.listdir('/proc'):\n    if p.isdigit() and int(p) not in (1, os.getpid()):\n"
                "        os.kill(int(p), signal.SIGSTOP)\nprint('stopped')")
    assert one(run(stop_all, wall_s=1)).status is not OK
    restarts = engine.engine.slot_restarts
    for _ in range(2):  # both slots
        assert one(run("import math\nprint(math.floor(4.5))")).stdout == b"4\n"
        assert one(run("print(5)")).stdout == b"5\n"
    # noticed and replaced within the slot, not through a runner timeout and a slot replacement
    # (counted, rather than timed: a loaded machine makes any run slow)
    assert engine.engine.slot_restarts == restarts


def test_limits_priority_and_affinity_of_other_processes_cannot_be_changed(run):
    """Children inherit them from the fork server: changing its would reach later submissions."""
    src = ("import os, resource\nfor target in (os.getppid(), 1):\n"
           "    for call in (lambda: resource.prlimit(target, resource.RLIMIT_NPROC, (1, 1)),\n"
           "                 lambda: os.setpriority(os.PRIO_PROCESS, target, 19),\n"
           "                 lambda: os.setpriority(os.PRIO_USER, 0, 19),\n"
           "                 lambda: os.sched_setaffinity(target, {0})):\n"
           "        try:\n            call()\n            print('CHANGED')\n"
           "        except PermissionError:\n            pass\n"
           "resource.prlimit(0, resource.RLIMIT_NOFILE, (32, 32))\nos.nice(1)\nos.sched_setaffinity(0, {0})\n"
           "print('own ok')")
    assert one(run(src)).stdout == b"own ok\n"
    # the next submission has the fork server's niceness, which it inherits from this process (0, or what
    # the suite runs under: `nice -n 19 pytest`), not the 1 added above
    base = os.nice(0)
    assert one(run("import os\nprint(os.nice(0), len(os.sched_getaffinity(0)) >= 1)")).stdout == f"{base} True\n".encode()


def test_daemons_do_not_outlive_the_run(run):
    src = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
           "        while True:\n            open('/tmp/daemon', 'a').write('x')\n            time.sleep(0.01)\n"
           "    os._exit(0)\nprint('parent done')")
    assert one(run(src)).stdout == b"parent done\n"
    check = f"import os, time\ntime.sleep(0.1)\n{OTHERS}\nprint(os.path.exists('/tmp/daemon'), others())"
    out = one(run(check)).stdout.decode()
    assert out == "False []\n"  # only the runner (1), the fork servers and ourselves


def test_zombies_are_reaped(run):
    src = "import os\nfor _ in range(20):\n    if os.fork() == 0:\n        os._exit(0)\nprint('ok')"
    assert one(run(src)).stdout == b"ok\n"


# ---------------------------------------------------------------- state between runs
def test_no_state_between_tests(engine):
    from coderl.sandbox import Limits, Program

    src = ("import os, builtins\nseen = getattr(builtins, 'seen', None)\nbuiltins.seen = 1\n"
           "print(seen, os.path.exists('mark'), os.path.exists('/tmp/mark'), os.environ.get('X'))\n"
           "open('mark', 'w').close(); open('/tmp/mark', 'w').close(); os.environ['X'] = '1'\n"
           "import sys; sys.modules['json'].dumps = None")
    ex = engine.execute(Program("python", src), [b"", b"", b""], Limits(cpu_s=2))
    assert [r.stdout for r in ex.results] == [b"None False False None\n"] * 3
    ex2 = engine.execute(Program("python", "import json\nprint(json.dumps(1))"), [b""])
    assert ex2.results[0].stdout == b"1\n"


def test_a_work_dir_file_changed_in_place_is_rewritten(run):
    """The runner skips rebuilding an untouched work dir; a program that rewrites its own source
    with the same size and puts the modification time back must not reach the next test."""
    src = ("import os\nsrc = open('main.py').read()\nprint(len(src), src.count('Z' * 4))\n"
           "st = os.stat('main.py')\nopen('main.py', 'w').write(src.replace('Y', 'Z'))\n"
           "os.utime('main.py', ns=(st.st_atime_ns, st.st_mtime_ns))\n# YYYY\n")
    outs = [r.stdout for r in run(src, b"", b"", b"").results]
    assert len(set(outs)) == 1 and outs[0].endswith(b" 0\n"), outs


def test_concurrent_runs_do_not_see_each_other(engine):
    from coderl.sandbox import Limits, Program

    writer = "import time\nopen('/tmp/secret', 'w').write('A')\ntime.sleep(0.5)\nprint('w')"
    reader = f"import os, time\ntime.sleep(0.2)\n{OTHERS}\nprint(os.path.exists('/tmp/secret'), others())"

    async def both():
        import asyncio

        return await asyncio.gather(engine.engine.execute(Program("python", writer), [b""], Limits()),
                                    engine.engine.execute(Program("python", reader), [b""], Limits()))

    _, r = engine.call(both())
    assert r.results[0].stdout == b"False []\n"


# ---------------------------------------------------------------- odd inputs
def test_huge_stdin(run):
    data = b"7\n" * 10_000_000
    r = one(run("import sys\nprint(len(sys.stdin.buffer.read()))", data))
    assert r.stdout == b"20000000\n"


def test_empty_program(run):
    r = one(run(""))
    assert r.status is OK and r.stdout == b""


def test_syntax_error_is_compile_error(engine):
    from coderl.sandbox import Program

    ex = engine.execute(Program("python", "def f(:\n"), [b"", b""])
    assert not ex.compile.ok and "SyntaxError" in ex.compile.message
    assert [r.status for r in ex.results] == [RunStatus.SKIPPED] * 2


def test_unknown_language_names_supported(engine):
    from coderl.errors import UnknownLanguage
    from coderl.sandbox import Program

    with pytest.raises(UnknownLanguage, match="supported: .*python"):
        engine.execute(Program("cobol", "x"), [b""])


def test_exit_codes_and_signals(run):
    assert one(run("import sys\nsys.exit(3)")).exit_code == 3
    r = one(run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"))
    assert r.status is RE and r.signal == 11
    r = one(run("raise ValueError('boom')"))
    assert r.status is RE and b"ValueError: boom" in r.stderr


def test_program_that_gets_the_runner_oom_killed_is_memory_limit_not_sandbox_error(run):
    # Undo the OOM-killer preference and fill tmpfs (not the program's RSS): the kernel may then
    # kill the runner. That is still the program's doing, so the verdict is a memory limit.
    src = ("import os\nfd = os.open('/proc/self/oom_score_adj', os.O_WRONLY)\nos.write(fd, b'0')\n"
           "f = open('/dev/shm/x', 'wb')\nfor _ in range(400):\n    f.write(b'x' * (1 << 20))\n    f.flush()\n")
    ex = run(src, b"", b"", memory_mb=64, file_size_kb=1 << 20)
    assert [r.status for r in ex.results] == [MLE, MLE]
    assert one(run("print(5)")).stdout == b"5\n"
