"""The grading run's launcher: pytest with its configuration pinned, watched by a supervisor that the
code under test cannot write into (stdlib only until pytest is imported from the environment).

Run as ``<env>/bin/python -I -S launcher.py`` with a JSON spec on stdin (``coderl.swe.grading_run``):
``-I`` ignores every ``PYTHON*`` variable and keeps the script's and the current directory off
``sys.path``; ``-S`` skips ``site``, so no ``sitecustomize`` / ``usercustomize`` is looked up and no
``.pth`` but the environment's own is read (we add the environment's site-packages ourselves).

The process forks before any code of the repository can run:

- the parent is the supervisor. It makes itself non-dumpable (a process of the same uid cannot
  reach its memory or descriptors through ``/proc``), hashes the protected test files as they are
  before the run, relays the child's records (``R`` lines) and ends with the child's real exit
  status (``X``). Only it holds the command's stdout, so a line it did not write cannot appear
  there unprefixed.
- the child runs pytest. Its stdout and stderr are the command's stderr, the log (for people,
  never read for verdicts: written there directly, not through the supervisor, which would only
  copy it and, on a busy machine, wait for a CPU to do so); the records pipe sits at a random
  descriptor number, not inheritable; every record carries an HMAC keyed by the spec's nonce (read
  from stdin, never in the environment or argv), computed by an audit hook that no Python object
  of the process leads to (``sender``), so a record written by anything but the grader's own code
  is detectable. ``sys.path`` is the standard library, then the environment's site-packages, and
  only once pytest, pluggy and the reporter are imported (and checked to come from there) the
  work-tree entries of the environment's ``.pth``. ``os.environ`` is replaced whole (no
  ``PYTEST_ADDOPTS`` / ``PYTEST_PLUGINS``; plugin autoload off: the environment's own pytest11
  plugins are named with ``-p``); once the runner is imported, byte code is the pristine
  snapshot's and the environment's, read-only, where the host found none written by the diff, else
  compiled afresh under a fresh ``sys.pycache_prefix`` (``byte_code``).

``locate ROOT FILE...`` (on the host, over the pristine snapshot): pytest's own answer to "which
configuration file and rootdir would this run use", as JSON.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib.util
import json
import os
import secrets
import sys
import tempfile
import time

REPO = "/repo"
RUNNER_NAMES = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "pygments",
                          "sitecustomize", "usercustomize"})
WATCHED_PREFIXES = ("pytest", "_pytest", "pluggy", "coderl_grading_reporter", "coderl_grading_rewrites")
DRAIN_AFTER_EXIT_S = 0.2
RELAY_POLL_S = 0.02
EXIT_NO_RUNNER = 71  # the environment has no usable pytest: the task's fault, never the agent's
EXIT_LAUNCHER = 70  # the launcher itself failed (before the run starts: ours; after: the run's)


def blob_sha(path: str) -> str:
    """git's blob id of a file's bytes (what ``git ls-tree`` lists), so the host can compare."""
    with open(path, "rb") as fh:
        data = fh.read()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def main() -> None:
    if sys.argv[1:2] == ["locate"]:
        locate(sys.argv[2], sys.argv[3], sys.argv[4:])
        return
    if sys.argv[1:2] == ["pristine"]:
        fill_pristine(sys.argv[2], sys.argv[3])
        return
    if sys.argv[1:2] == ["preimports"]:
        probe_preimports(sys.argv[2])
        return
    spec = json.loads(sys.stdin.buffer.read())
    global REPO
    REPO = spec.get("repo", REPO)  # an image's work tree (SWE-bench's /testbed) instead of a session's /repo
    devnull = os.open("/dev/null", os.O_RDWR)
    os.dup2(devnull, 0)
    os.close(devnull)
    try:
        runner = prepare(spec)
    except Unprepared as exc:
        os.write(2, f"launcher: {exc.args[1]}\n".encode())
        write_all(1, b"X " + json.dumps({"exit_code": exc.args[0], "signal": None}).encode() + b"\n")
        return
    if spec.get("go"):
        go = wait_for_go(spec["go"], spec["go_within_s"])
        if go is None:
            return  # the host gave the run up (the diff did not apply): nothing ran, nothing to report
        spec["byte_code"] = go.get("byte_code")
    protected = {}
    for rel in spec["protected"]:
        try:
            protected[rel] = blob_sha(os.path.join(REPO, rel))
        except OSError:
            protected[rel] = None
    rec_r, rec_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rec_r)
        run_child(spec, rec_w, runner)
    os.close(rec_w)
    spec.clear()  # the nonce: the supervisor needs none of it
    supervise(pid, rec_r, protected)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no finalization of an interpreter holding pytest and the runner's modules (10-30 ms a run)


def wait_for_go(path: str, within_s: float) -> dict | None:
    """The host's go-ahead (``coderl.swe.go_signal``), read from a FIFO in a directory the host binds
    read-only into this sandbox alone: one JSON line, written once the diff and the test patch are
    applied, the protected files restored and the work tree's byte code checked (``{"byte_code":
    "pristine"}`` or ``{}``). None when the host closed the FIFO without one, or sent none within
    ``within_s`` (a run started ahead that no grading took). The run is started before the applies
    so that this process's start, pytest's import and the runner's own modules (``prepare``) cost
    nothing on the grading's path; nothing of the work tree is read before the go-ahead."""
    import select

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # the host holds it open for writing: EOF only once it closes
    except OSError:  # removed: the host gave the run up before this process got here
        return None
    deadline = time.monotonic() + within_s
    data = b""
    try:
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                continue
            if not chunk:
                return None
            data += chunk
    finally:
        os.close(fd)
    return json.loads(data)


def supervise(pid: int, rec_r: int, protected: dict) -> None:
    _non_dumpable()
    write_all(1, b"E " + json.dumps({"protected": protected}).encode() + b"\n")
    import select

    exited = _exit_wakeup()
    pending = b""
    open_fds = [rec_r]
    status = None
    drain_until = None
    os.set_blocking(rec_r, False)
    while open_fds:
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status, drain_until = st, time.monotonic() + DRAIN_AFTER_EXIT_S
        if drain_until is not None and time.monotonic() >= drain_until:
            break  # something the child started still holds a pipe: what it writes now is not the run's
        # polled, not woken by each record: a wake-up per record took the CPU from the test process
        # (1-3 ms a record at load 18); the pipe (64 KiB, the default: a bigger one counts against the
        # sandbox user's pipe allowance, shared by every sandbox) holds what comes meanwhile. Woken at
        # once when the child exits (``exited``), and from then on by the pipe itself (its end, or
        # what the child's own children still write before ``drain_until``)
        if status is None:
            select.select([exited], [], [], RELAY_POLL_S)
        else:
            select.select(open_fds, [], [], max(0.0, drain_until - time.monotonic()))
        with contextlib.suppress(BlockingIOError):
            os.read(exited, 64)
        for fd in list(open_fds):
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    break
                if not chunk:
                    open_fds.remove(fd)
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                write_all(1, b"".join(b"R " + line + b"\n" for line in lines))
    if pending:
        write_all(1, b"R " + pending + b"\n")
    if status is None:
        status = os.waitpid(pid, 0)[1]
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    write_all(1, b"X " + json.dumps({"exit_code": code, "signal": sig}).encode() + b"\n")


def _exit_wakeup() -> int:
    """A descriptor that becomes readable when a child exits (``SIGCHLD`` through the signal
    wake-up descriptor), so the supervisor's poll ends with the child instead of up to
    ``RELAY_POLL_S`` after it."""
    import signal

    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    return r


def _non_dumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)`` through ``_ctypes``, the C half of ``ctypes``: importing
    ``ctypes`` itself costs 8 ms of CPU per run (its Python module builds dozens of types), the C
    half 0.6 ms, and this one call needs only a C function pointer returning an int."""
    import _ctypes

    class Int(_ctypes._SimpleCData):
        _type_ = "i"

    class CFunction(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = Int

    CFunction(_ctypes.dlsym(_ctypes.dlopen(None), "prctl"))(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0


class Unprepared(Exception):
    """(exit status, why): the run cannot start; the status is the host's ``EXIT_*``."""


class Runner:
    """What ``prepare`` made ready: the work-tree entries of sys.path, the grader's modules and code."""

    def __init__(self, repo_paths: list[str], modules: dict, own: list, plugins: list[str], trusted: tuple,
                 runner_files: dict, baseline: object = None) -> None:
        self.repo_paths, self.modules, self.own = repo_paths, modules, own
        self.plugins, self.trusted, self.runner_files = plugins, trusted, runner_files
        self.baseline = baseline


def prepare(spec: dict) -> Runner:
    """Everything of the run that reads no file of the work tree, done before the fork (and, with a
    ``go`` in the spec, while the host is still applying the diff): the clean environment,
    ``sys.path`` without the work tree, pytest and pluggy (checked to come from the environment),
    the reporter and its code objects, the environment's plugin names, pytest's own plugin modules,
    the reporter's baseline of them (``reporter.Baseline``: their code objects and functions).
    Raises ``Unprepared``."""
    try:
        os.environ.clear()
        os.environ.update(spec["env"])
        repo_paths = _site(spec["site_packages"])
        if spec.get("runner") == "django":  # tests/runtests.py under unittest's records (django_runner.py)
            modules = {"runner": _load("django_runner"), "rewrites": _load("rewrites")}
            return Runner(repo_paths, modules, _own_code(modules["rewrites"]), [], (), {})
        try:
            import pluggy
            import pytest
        except ImportError as exc:
            raise Unprepared(EXIT_NO_RUNNER, f"the task's environment has no pytest: {exc}") from exc
        modules = {"rewrites": _load("rewrites"), "reporter": _load("reporter")}
        own = _own_code(modules["rewrites"])
        plugins = _env_plugins(spec["site_packages"])
        _import_runner_modules()
        trusted = (sys.base_prefix, sys.prefix, spec["site_packages"], os.path.dirname(os.path.abspath(__file__)))
        runner_files = {m.__name__: m.__file__ for m in (pytest, pluggy, sys.modules["_pytest"])}
        reporter = modules["reporter"]
        foreign = {name: f for name, f in runner_files.items() if not reporter.under(f, reporter.real_prefixes(trusted[:3]))}
        if foreign:
            raise Unprepared(EXIT_NO_RUNNER, f"the test runner does not come from the environment: {foreign}")
        baseline = reporter.Baseline(modules["rewrites"], _watched_modules())
        for name in spec.get("preimport", ()):  # after the baseline: a change they make to pytest is a finding
            importlib.import_module(name)
        return Runner(repo_paths, modules, own, plugins, trusted, runner_files, baseline)
    except Unprepared:
        raise
    except BaseException as exc:  # noqa: BLE001 - ours, before anything of the repository ran
        raise Unprepared(EXIT_LAUNCHER, f"{type(exc).__name__}: {exc}") from exc


def run_child(spec: dict, rec_w: int, runner: Runner) -> None:
    """pytest under the pinned configuration; never returns."""
    _exit = os._exit  # bound before any code of the repository runs, which could replace os._exit
    try:
        os.dup2(2, 1)  # the command's stdout is the supervisor's alone
        fd = 100 + secrets.randbelow(900)
        os.dup2(rec_w, fd, inheritable=False)
        _close_fds_but(fd)
        repo_paths = [p for p in runner.repo_paths if os.path.exists(p)]  # as site keeps them, the diff applied
        rewrites = runner.modules["rewrites"]
        send = sender(fd, spec.pop("nonce").encode(), runner.own)
        if spec.get("runner") == "django":
            _exit(runner.modules["runner"].run(spec, send, repo_paths, blob_sha, rewrites))
        import pytest

        reporter = runner.modules["reporter"]
        send("start", pytest=pytest.__version__, runner=runner.runner_files, shadows=_shadows(repo_paths, blob_sha))
        byte_code(spec)
        sys.path.extend(repo_paths)
        os.chdir(REPO)
        pristine = _pristine(rewrites, spec["protected"], spec["wanted"], spec.get("pristine_cache"))
        plugin = reporter.Reporter(send, wanted=frozenset(spec["wanted"]), repo=REPO, trusted=runner.trusted,
                                   blob=blob_sha, watched=_watched_modules(), runner_names=RUNNER_NAMES,
                                   rewrites=rewrites, pristine=pristine, tests=frozenset(spec["protected"]),
                                   baseline=runner.baseline)
        fixed = {name: getattr(plugin, name) for name in reporter.FIXED_ATTRIBUTES}
        sys.addaudithook(plugin.watch)  # for the rest of the process: no code can remove it
        plugins = runner.plugins
        ret = int(pytest.main([*spec["args"], *_quiet_plugin_order(pytest), *(a for p in plugins for a in ("-p", p))],
                              plugins=[plugin]))
        send("exit", ret=ret, replaced=plugin.replaced(fixed))  # our own send, not the plugin's
        sys.stdout.flush()
        sys.stderr.flush()
        _exit(ret)
    except BaseException as exc:  # noqa: BLE001 - report and die, never fall back into the supervisor's code
        os.write(2, f"launcher: {type(exc).__name__}: {exc}\n".encode())
        _exit(EXIT_LAUNCHER)


def byte_code(spec: dict) -> None:
    """Where the rest of the run's byte code comes from. ``"byte_code": "pristine"`` (the host found
    no byte code the diff wrote in the work tree: ``grading_run.diff_byte_code``): the ``.pyc`` files
    the work tree holds are the snapshot's, compiled on the host from the pristine sources
    (``swe.bytecode``), and the environment's and the interpreter's own, all timestamp-checked (a file
    the diff changed has a new mtime, so its stale byte code is never used): read, never written
    (the next grading is a fresh session anyway). Otherwise byte code is compiled afresh under a fresh
    ``sys.pycache_prefix``: a ``.pyc`` the work tree holds is never used (the runner's own modules,
    imported before, keep their environment's cache)."""
    if spec.get("byte_code") == "pristine":
        sys.dont_write_bytecode = True
    else:
        sys.pycache_prefix = tempfile.mkdtemp(prefix="pycache-", dir="/tmp")


def _close_fds_but(keep: int) -> None:
    """Close every descriptor above 2 but ``keep``: those ``/proc/self/fd`` lists (the sandbox mounts
    its own /proc), else all up to 65536. ``os.closerange`` before Python 3.10 makes one ``close``
    call per number, 65,533 system calls through the sandbox's seccomp filter (~0.1 s a run on a
    loaded machine)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        os.closerange(3, keep)
        os.closerange(keep + 1, 1 << 16)
        return
    for fd in fds:
        if fd > 2 and fd != keep:
            with contextlib.suppress(OSError):  # the listing's own descriptor, closed already
                os.close(fd)


def _site(site_packages: str) -> list[str]:
    """What ``site`` does for a virtualenv, less what reads the work tree: ``sys.prefix`` is the
    environment, its site-packages on sys.path (its ``.pth`` files read), the ``exit`` / ``quit`` /
    ``help`` builtins (code under test calls them). The work-tree entries the ``.pth`` files add are
    taken off; those they name are returned (``_pth_entries``), for the child to put back once the
    runner is imported and the diff applied, keeping those that exist then, as ``site`` would."""
    import site

    sys.prefix = sys.exec_prefix = os.path.dirname(os.path.dirname(os.path.dirname(site_packages)))
    site.setquit()
    site.setcopyright()
    site.sethelper()
    before = set(sys.path)
    site.addsitedir(site_packages)
    sys.path[:] = [p for p in sys.path if p in before or not (p == REPO or p.startswith(REPO + "/"))]
    return _pth_entries(site_packages)


def _pth_entries(site_packages: str) -> list[str]:
    """The work-tree directories the environment's ``.pth`` files name, in the order ``site`` reads
    them (files sorted by name, then lines), whether or not they exist now: ``prepare`` may run
    before the diff is applied, and ``site`` keeps only those that exist."""
    found = []
    for name in sorted(os.listdir(site_packages)):
        if not name.endswith(".pth") or name.startswith("."):
            continue
        try:
            with open(os.path.join(site_packages, name), encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            continue
        for line in lines:
            if not line.strip() or line.startswith(("#", "import ", "import\t")):
                continue
            path = os.path.abspath(os.path.join(site_packages, line.rstrip()))
            if (path == REPO or path.startswith(REPO + "/")) and path not in found:
                found.append(path)
    return found


RECORD_EVENT = "coderl.grading.record"


def sender(fd: int, key: bytes, own: list):  # type: ignore[no-untyped-def]
    """``send(kind, **fields)``: one record, ``<hmac> <json>``, written whole to the records pipe.

    The writer is an audit hook: ``send`` only raises the audit event ``RECORD_EVENT``. The hook
    holds the key, the descriptor and the record count in its cells, and the garbage collector is
    made to forget the hook, its cells and what they hold (``_untrack``): Python code cannot list or
    remove audit hooks, so no object the code under test can reach (by ``gc``, attributes,
    closures, its own frames) leads to them. The hook writes the record only when ``send`` was
    called by the grader's own code (``own``: the code objects of the launcher and of the modules
    it loaded, by identity); a record sent by any other code becomes a ``forged`` record naming
    where that code claims to come from. Records are numbered by the hook, in the order written."""
    import _thread

    audit, getframe, dumps, write = sys.audit, sys._getframe, json.dumps, os.write
    mac = _hmac_hex()
    allowed = {id(code): code for code in own}
    count = [0]
    lock = _thread.allocate_lock()
    sending: list = []

    def hook(event: str, args: tuple) -> None:
        if event != RECORD_EVENT:
            return
        try:
            caller = getframe(2).f_code
            genuine = getframe(1).f_code is sending[0] and allowed.get(id(caller)) is caller
        except ValueError:  # raised from no frame of ours
            caller, genuine = None, False
        if genuine:
            kind, fields = args
        else:
            kind, fields = "forged", {"by": str(getattr(caller, "co_filename", "?"))[-200:]}
        with lock:
            text = dumps({"seq": count[0], "kind": kind, **fields}, separators=(",", ":"), ensure_ascii=True).encode()
            count[0] += 1
            line = mac(key, text) + b" " + text + b"\n"
            while line:
                line = line[write(fd, line):]

    def send(kind: str, **fields: object) -> None:
        audit(RECORD_EVENT, kind, fields)

    sending.append(send.__code__)
    _untrack(hook, hook.__closure__, *hook.__closure__, allowed, count, sending)
    sys.addaudithook(hook)
    return send


def _hmac_hex():  # type: ignore[no-untyped-def]
    """``mac(key, text)``: HMAC-SHA256 in hex, as bytes, in one C call where the interpreter has it
    (no ``hmac.HMAC`` object, holding the keyed state, ever exists in the process)."""
    try:
        from _hashlib import hmac_digest

        return lambda key, text: hmac_digest(key, text, "sha256").hex().encode()
    except ImportError:
        return lambda key, text: hmac.new(key, text, hashlib.sha256).hexdigest().encode()


def _untrack(*objects: object) -> None:
    """``PyObject_GC_UnTrack`` of each object: ``gc.get_objects()`` and ``gc.get_referrers()`` never
    return it again. Only for objects that live until the process ends (``os._exit``: no
    finalization, so no deallocation of an untracked function or cell)."""
    import _ctypes
    import gc

    class Object(_ctypes._SimpleCData):
        _type_ = "O"

    class Untrack(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_PYTHONAPI
        _argtypes_ = (Object,)
        _restype_ = None

    untrack = Untrack(_ctypes.dlsym(_ctypes.dlopen(None), "PyObject_GC_UnTrack"))
    for obj in objects:
        if gc.is_tracked(obj):
            untrack(obj)


def _own_code(rewrites) -> list:  # type: ignore[no-untyped-def]
    """The code objects of the grader: this launcher's and those of the modules it loaded
    (``coderl_grading_*``), walked now, before any code of the repository runs."""
    mine = [sys.modules[__name__], *(m for name, m in list(sys.modules.items()) if name.startswith("coderl_grading_"))]
    return [code for module in mine for code in rewrites.module_codes(module)]


def _pristine(rewrites, protected: list[str], wanted: list[str], cache: str | None = None):  # type: ignore[no-untyped-def]
    """The protected Python files compiled as pytest's assertion rewriting compiles a test module,
    now, before any code of the repository runs (``rewrites.Pristine``), each with the top-level
    names its wanted tests live in (``file::Class::test[params]`` -> ``Class``); from the host's
    cache of the same compilation of the same bytes where it holds them (``cache``)."""
    import ast

    from _pytest.assertion.rewrite import rewrite_asserts

    names = wanted_names(wanted)
    pristine = rewrites.Pristine(rewrite_asserts, ast.parse, compile, cache)
    for rel in protected:
        if rel.endswith(".py"):
            pristine.add(os.path.join(REPO, rel), names.get(rel, frozenset()))
    return pristine


def wanted_names(wanted: list[str]) -> dict[str, frozenset[str]]:
    """file -> the top-level names its wanted tests live in (``file::Class::test[params]`` -> ``Class``)."""
    names: dict[str, set[str]] = {}
    for test in wanted:
        path, _, rest = test.partition("::")
        names.setdefault(path, set()).add(rest.split("::", 1)[0].split("[", 1)[0])
    return {path: frozenset(found) for path, found in names.items()}


def fill_pristine(site_packages: str, cache: str) -> None:
    """On the host (``grading_run.fill_pristine``): the variants ``Pristine`` caches (``CACHED``) of
    the files given on stdin (JSON: ``repo``, ``wanted``, ``files``: path -> bytes in base64, as the
    grading sandbox holds them once the protected files are restored and the test patch applied),
    compiled by ``Pristine`` itself with this environment's interpreter and pytest, each written to
    ``cache`` under its ``cache_key`` (whole, by a rename). Reads no file of any work tree."""
    import ast
    import base64
    import marshal
    import site

    site.addsitedir(site_packages)
    from _pytest.assertion.rewrite import rewrite_asserts

    request = json.loads(sys.stdin.buffer.read())
    rewrites = _load("rewrites")
    names = wanted_names(request["wanted"])
    pristine = rewrites.Pristine(rewrite_asserts, ast.parse, compile)
    for rel, data in request["files"].items():
        path = os.path.join(request["repo"], rel)
        pristine.add(path, names.get(rel, frozenset()), now=False, source=base64.b64decode(data))
        for variant, partial in rewrites.Pristine.CACHED:
            key = pristine.key(path, variant, partial)
            if key is None or (partial and not names.get(rel)) or os.path.exists(os.path.join(cache, key)):
                continue
            module = pristine.compile(path, variant, partial, None)
            if module is None:
                continue
            fd, tmp = tempfile.mkstemp(dir=cache, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(marshal.dumps(module))
            os.chmod(tmp, 0o644)
            os.replace(tmp, os.path.join(cache, key))


def _load(module: str):  # type: ignore[no-untyped-def]
    """A module beside this file (``reporter``, ``rewrites``), by path, as
    ``coderl_grading_<module>``: the ``.pyc`` when this is the compiled launcher
    (``grading_run.compiled_launcher``: all compiled on the host, so none is compiled again on
    every run), else the source."""
    here = os.path.dirname(os.path.abspath(__file__))
    name = f"{module}.pyc" if __file__.endswith(".pyc") else f"{module}.py"
    spec = importlib.util.spec_from_file_location(f"coderl_grading_{module}", os.path.join(here, name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# what pytest imports while it configures itself, past its plugins: its debugger's ``pdb`` (with
# ``cmd``, ``code``), its argument completion, the package-metadata parser
CONFIGURE_IMPORTS = ("pdb", "_pytest._argcomplete", "email.parser")


def probe_preimports(site_packages: str) -> None:
    """``preimports SITE_PACKAGES`` (on the host, boxed: ``coderl.swe.preimports``): the required
    distributions' modules a run may import before its go-ahead (``preimport.probe``), as JSON,
    probed in the state ``prepare`` imports them in: a clean environment, ``sys.path`` without the
    work tree, pytest and its plugin modules imported."""
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"})
    _site(site_packages)
    import pytest  # noqa: F401

    _import_runner_modules()
    trusted = (sys.base_prefix, sys.prefix, site_packages)
    json.dump({"preimport": _load("preimport").probe(site_packages, trusted)}, sys.stdout)


def _import_runner_modules() -> None:
    """pytest's own plugin modules and what it imports while it configures itself, imported now
    (from the environment and the standard library) rather than while the work tree is on
    sys.path, so they are part of what the reporter watches, and before ``sys.pycache_prefix``
    moves, so their cached byte code is used (after, each is compiled afresh: some 50 ms of CPU a
    run for the plugins, 40 ms for ``CONFIGURE_IMPORTS``)."""
    import _pytest.config as config

    plugins = (f"_pytest.{name}" for name in (*getattr(config, "essential_plugins", ()),
                                              *getattr(config, "default_plugins", ())))
    for name in (*plugins, *CONFIGURE_IMPORTS):
        try:
            importlib.import_module(name)
        except ImportError:
            continue


def _env_plugins(site_packages: str) -> list[str]:
    """The ``pytest11`` entry points the task's environment installs (autoload is off: a
    ``.dist-info`` in the work tree must not add a plugin), as ``-p`` module names."""
    try:
        from importlib.metadata import distributions
    except ImportError:  # Python before 3.8: no plugins but pytest's own
        return []
    names = []
    for dist in distributions(path=[site_packages]):
        for ep in dist.entry_points:
            if ep.group == "pytest11":
                names.append(ep.value.split(":", 1)[0].strip())
    return sorted(set(names))


def _quiet_plugin_order(pytest) -> list[str]:  # type: ignore[no-untyped-def]
    """pytest's warning that a ``-p`` plugin module was imported before it could be marked for
    assertion rewriting, ignored. Autoload marks every file of a plugin's distribution first; with
    ``-p`` names, one entry point's package may import another's module (pytest-xdist:
    ``xdist.looponfail`` imports ``xdist``, whose ``__init__`` imports ``xdist.plugin``), and a
    project whose configuration makes warnings errors (astropy: ``filterwarnings = error``) then
    failed before any test ran. Only that message; pytest before 3.8 has no such category."""
    if not hasattr(pytest, "PytestAssertRewriteWarning"):
        return []
    return ["-W", "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning"]


def _shadows(repo_paths: list[str], blob) -> list[dict]:  # type: ignore[no-untyped-def]
    """Files in the work-tree entries of sys.path named like the runner's modules or a start-up
    hook, or any ``.pth`` (inert here, but the host asks whether the base commit has them)."""
    found = []
    for entry in repo_paths:
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in names:
            stem = name[:-3] if name.endswith(".py") else name
            if stem in RUNNER_NAMES or name.endswith(".pth"):
                path = os.path.join(entry, name)
                is_file = os.path.isfile(path)
                found.append({"path": os.path.relpath(path, REPO), "blob": blob(path) if is_file else None})
    return found


def _watched_modules() -> dict:
    return {name: mod for name, mod in sys.modules.items() if name.split(".")[0] in WATCHED_PREFIXES}


def locate(root: str, site_packages: str, files: list[str]) -> None:
    import inspect
    import pathlib
    import site

    site.addsitedir(site_packages)
    from _pytest.config.findpaths import determine_setup

    os.chdir(root)  # pytest before 8.1 takes the invocation directory from the cwd
    kw = {"inifile": None, "args": [os.path.join(root, f) for f in files], "rootdir_cmd_arg": None,
          "override_ini": None, "invocation_dir": pathlib.Path(root)}
    params = inspect.signature(determine_setup).parameters
    rootdir, inipath = determine_setup(**{k: v for k, v in kw.items() if k in params})[:2]
    json.dump({"rootdir": str(rootdir), "inifile": None if inipath is None else str(inipath)}, sys.stdout)


if __name__ == "__main__":
    main()
