"""Which of the environment's modules a grading run may import before its go-ahead: the probe.

A run started ahead (``launcher.prepare``) waits while the host applies the diff; whatever it
imports then is off the grading's path. The project's own modules cannot be imported then (they
are the work tree's, which the diff changes), but the distributions the project requires are the
environment's, the same in every grading: flask-4992's conftest spends some 55 ms of a 0.2 s run
importing werkzeug, jinja2, click and itsdangerous. Importing a module early is the same as
importing it later only when its import depends on nothing the run could have changed by then and
changes nothing the run could notice, so this probe (run once per environment on the host, boxed,
by ``launcher.py preimports``) keeps a required distribution's top-level module only when its
import, in a fresh process that has imported pytest as a run has:

- raises nothing and emits no warning (under a filter that shows every warning), and leaves the
  warning filters as they were;
- reads no environment variable and changes none (``os.environ`` recorded, ``putenv``);
- opens, lists or changes to no relative path and none under the work tree, ``/tmp`` or ``$HOME``,
  and opens nothing for writing;
- starts no process or thread, opens no socket, installs no profile or trace function;
- leaves ``sys.path``, ``sys.meta_path``, ``sys.path_hooks``, the hooks and streams of ``sys``,
  the signal handlers, the recursion limit, the random module's state, the locale and the working
  directory as they were;
- imports nothing from outside the interpreter and the environment.

A module whose import breaks one is dropped, and the rest is probed again in a fresh process (one
module may be imported first by another's import) until a pass finds none. What a run does with
the list, and what the host checks first (a work tree holding a module of the same name), is in
``coderl.swe.preimports``.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys

REPO = "/repo"
MAX_PASSES = 8
_PATH_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "os.chdir", "os.mkdir", "os.remove", "os.rename",
                          "os.rmdir", "os.chmod", "os.chown", "os.symlink", "os.link", "os.truncate", "os.utime"})
_FORBIDDEN_EVENTS = ("subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
                     "os.putenv", "os.unsetenv", "os.kill", "os.killpg", "socket.", "_thread.start_",
                     "sys.setprofile", "sys.settrace", "sys.addaudithook", "os.startfile", "pty.spawn")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def candidates(site_packages: str) -> list[str]:
    """The top-level modules of the distributions the project requires, transitively, in that
    order: the project being the environment's editable installs (``direct_url.json``), whose
    modules are the work tree's. Requirements of an extra, or whose marker is false here, are left
    out. [] before Python 3.8 (no ``importlib.metadata``)."""
    try:
        from importlib.metadata import distributions
    except ImportError:
        return []
    dists = {}
    for dist in distributions(path=[site_packages]):
        name = dist.metadata["Name"]
        if name:
            dists.setdefault(_canonical(name), dist)
    projects = [key for key, dist in dists.items() if _editable(dist)]
    order, queue = [], list(projects)
    while queue:
        key = queue.pop(0)
        if key in order or key not in dists:
            continue
        order.append(key)
        queue.extend(_required(dists[key]))
    names: list[str] = []
    for key in order:
        if key in projects:
            continue
        for module in _top_level(dists[key], site_packages):
            if module not in names:
                names.append(module)
    return names


def _editable(dist) -> bool:  # type: ignore[no-untyped-def]
    try:
        url = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return False
    return bool(url.get("dir_info", {}).get("editable"))


def _required(dist) -> list[str]:  # type: ignore[no-untyped-def]
    """The canonical names of what ``dist`` requires with no extra, its markers evaluated here
    (with ``packaging`` where the environment has it; without, requirements with a marker are left out)."""
    try:
        from packaging.requirements import Requirement
    except ImportError:
        Requirement = None  # noqa: N806
    found = []
    for line in dist.requires or []:
        if Requirement is not None:
            try:
                req = Requirement(line)
                if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                    continue
                found.append(_canonical(req.name))
            except Exception:  # noqa: BLE001 - an unreadable requirement: left out
                continue
        elif ";" not in line:
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
            if match:
                found.append(_canonical(match.group(1)))
    return found


def _top_level(dist, site_packages: str) -> list[str]:  # type: ignore[no-untyped-def]
    """A distribution's top-level import names that are modules or regular packages in
    ``site_packages`` (never a namespace package, whose contents a work tree can add to)."""
    listed = (dist.read_text("top_level.txt") or "").split()
    if not listed:
        listed = [str(f).split("/")[0] for f in dist.files or [] if "/" in str(f) or str(f).endswith(".py")]
    names = []
    for entry in listed:
        name = entry.split(".")[0] if entry.endswith((".py", ".so")) else entry
        if not name.isidentifier() or name in names:
            continue
        if os.path.isfile(os.path.join(site_packages, name, "__init__.py")) or os.path.isfile(
                os.path.join(site_packages, name + ".py")):
            names.append(name)
    return names


def probe(site_packages: str, trusted: tuple[str, ...]) -> list[str]:
    """``candidates`` less those whose import is not pure (above), each pass in a fresh child."""
    names = candidates(site_packages)
    for _ in range(MAX_PASSES):
        if not names:
            return []
        bad = _pass_in_child(names, trusted)
        if bad is None:
            return []
        if not bad:
            return names
        names = [n for n in names if n not in bad]
    return []


def _pass_in_child(names: list[str], trusted: tuple[str, ...]) -> list[str] | None:
    """The names whose import broke a rule, from a forked child (this process imports none of
    them); None when the child gave no answer."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = json.dumps(_impure(names, trusted)).encode()
        except BaseException:  # noqa: BLE001 - no answer: nothing is kept
            os._exit(1)
        while out:
            out = out[os.write(w, out):]
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return None
    return list(json.loads(data))


class _Watch:
    """What the import under way did that the rules forbid (audit events, ``os.environ``)."""

    def __init__(self, trusted: tuple[str, ...]) -> None:
        self.current: str | None = None
        self.bad: set[str] = set()
        self.trusted = tuple(os.path.realpath(p) for p in trusted)
        self.private = tuple(os.path.realpath(p) for p in (REPO, "/tmp", os.path.expanduser("~")))

    def flag(self) -> None:
        if self.current is not None:
            self.bad.add(self.current)

    def audit(self, event: str, args: tuple) -> None:
        if self.current is None:
            return
        if event.startswith(_FORBIDDEN_EVENTS):
            self.flag()
        elif event in _PATH_EVENTS:
            path = args[0] if args else None
            if event == "open" and _writes(args):
                self.flag()
            elif isinstance(path, int) or path is None:
                return  # a descriptor: opened before, under these rules
            else:
                path = os.fsdecode(path)
                if not os.path.isabs(path):
                    self.flag()
                    return
                real = os.path.realpath(path)
                if not _under(real, self.trusted) and _under(real, self.private):
                    self.flag()


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in prefixes)


def _writes(args: tuple) -> bool:
    """Whether an ``open`` audit event's (path, mode, flags) opens for writing."""
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else 0
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    return (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and bool(flags & writing))


def _environ_recorder(watch: _Watch):  # type: ignore[no-untyped-def]
    """``os.environ`` as it is, but every read or change of a variable flags the import under way."""
    base = type(os.environ)

    class Recorded(base):  # type: ignore[misc, valid-type]
        def __getitem__(self, key):  # type: ignore[no-untyped-def]
            watch.flag()
            return base.__getitem__(self, key)

        def __setitem__(self, key, value):  # type: ignore[no-untyped-def]
            watch.flag()
            base.__setitem__(self, key, value)

        def __delitem__(self, key):  # type: ignore[no-untyped-def]
            watch.flag()
            base.__delitem__(self, key)

        def __iter__(self):  # type: ignore[no-untyped-def]
            watch.flag()
            return base.__iter__(self)

        def __len__(self):  # type: ignore[no-untyped-def]
            watch.flag()
            return base.__len__(self)

    recorded = object.__new__(Recorded)
    recorded.__dict__.update(os.environ.__dict__)
    return recorded


def _record_thread_starts(watch: _Watch) -> None:
    """A thread started flags the import under way (no audit event says so before Python 3.13):
    the functions ``threading`` and ``_thread`` start them with, wrapped."""
    import _thread
    import threading

    for module, name in ((_thread, "start_new_thread"), (_thread, "start_joinable_thread"),
                         (threading, "_start_new_thread"), (threading, "_start_joinable_thread")):
        start = getattr(module, name, None)
        if start is None:
            continue

        def flagged(*args, _start=start, **kw):  # type: ignore[no-untyped-def]
            watch.flag()
            return _start(*args, **kw)
        setattr(module, name, flagged)


def _state() -> tuple:
    import locale
    import random
    import signal

    handlers = []
    for number in range(1, signal.NSIG):
        try:
            handlers.append(signal.getsignal(number))
        except (ValueError, OSError):
            handlers.append(None)
    return (list(sys.path), list(sys.meta_path), list(sys.path_hooks), sys.excepthook, sys.displayhook,
            sys.stdout, sys.stderr, sys.stdin, sys.gettrace(), sys.getprofile(), sys.getrecursionlimit(),
            handlers, random.getstate(), locale.setlocale(locale.LC_ALL), os.getcwd())


def _impure(names: list[str], trusted: tuple[str, ...]) -> list[str]:
    """Import ``names`` in order, each watched (this process is the probe's child, thrown away)."""
    import threading
    import warnings

    watch = _Watch(trusted)
    sys.addaudithook(watch.audit)
    _record_thread_starts(watch)
    os.environ = _environ_recorder(watch)  # noqa: B003 - a recorder of the same variables: os.getenv reads this global
    for name in names:
        if name in sys.modules:
            continue
        before, modules, threads = _state(), set(sys.modules), threading.active_count()
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            filters = list(warnings.filters)
            watch.current = name
            try:
                importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - not importable here: not imported ahead
                watch.flag()
            watch.current = None
            if shown or warnings.filters != filters:
                watch.bad.add(name)
        if _state() != before or threading.active_count() != threads:
            watch.bad.add(name)
        for new in set(sys.modules) - modules:
            path = getattr(sys.modules[new], "__file__", None)
            if path and not _under(os.path.realpath(path), watch.trusted):
                watch.bad.add(name)
    return sorted(watch.bad)
