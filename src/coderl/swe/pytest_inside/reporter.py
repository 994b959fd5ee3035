"""The grading run's pytest plugin: the per-test records the verdicts are made of.

Loaded by ``launcher.py`` from its read-only path (never by name from ``sys.path``) and handed to
``pytest.main(plugins=[...])``, so it is registered before any conftest or test module is imported.
It writes records through the ``send`` the launcher gives it (an HMAC-keyed line on a pipe to the
supervisor); the host (``coderl.swe.verdicts``) reads them and cross-checks them. What it records:

- ``item``: each wanted test (FAIL_TO_PASS / PASS_TO_PASS) collected, whether it carried an
  ``xfail`` marker at collection (from the test file, which is the base commit's), and the file
  (with its blob id) its function's code comes from;
- ``call``: what the test function's call raised, seen by our own wrapper around
  ``pytest_runtest_call`` (not from pytest's report, which code under test can rewrite);
- ``report``: each phase's report of a wanted test; ``failure``: the failures of other tests;
  ``collect_error``;
- ``module`` / ``plugin``: the bytes (git blob id) of every test module pytest imports and of
  every plugin or conftest registered from outside the environment, for the host to compare
  with the base commit;
- ``finish``: pytest's exit status, the failures and set-ups counted here, the number collected,
  modules of the standard library or the runner that were imported from the work tree, and which
  hook implementations changed after collection.

The launcher then sends ``exit`` with its own ``send``: pytest's return value and ``replaced``,
which functions of pytest, pluggy or this plugin, or which of this instance's attributes, are not
what they were before any code of the repository ran.

The code under test runs in this process and could, with enough effort, forge all of this; the
records make each known route visible instead (see docs/agent.md, the attack table).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys

import pytest

MAX_OTHER_FAILURES = 50
# what a Reporter holds from start to end (the rest is counts and state it rebinds as it goes)
FIXED_ATTRIBUTES = ("_send", "_wanted", "_repo", "_in_repo", "_trusted", "_blob", "_watched", "_runner_names", "_functions",
                    "_ids", "_pristine", "_rewrites", "_is_trusted", "_is_repo", "_tests", "_closes", "watch")


def real_prefixes(prefixes: tuple[str, ...]) -> tuple[str, ...]:
    """``prefixes`` with their symlinks resolved, once, before any code of the repository runs: what
    they resolve to then is what counts (and resolving them again on every check costs the run
    hundreds of ``lstat`` calls)."""
    return tuple(os.path.realpath(prefix) for prefix in prefixes)


def under(path: str, prefixes: tuple[str, ...], dirs: dict[str, str] | None = None) -> bool:
    """``path`` (symlinks resolved, through ``resolved`` when given its ``dirs``) is one of
    ``prefixes`` (from ``real_prefixes``) or inside one."""
    real = os.path.realpath(path) if dirs is None else resolved(path, dirs)
    return any(real == top or real.startswith(top.rstrip("/") + "/") for top in prefixes)


def resolved(path: str, dirs: dict[str, str]) -> str:
    """``os.path.realpath(path)``, with the directories' resolutions kept in ``dirs`` for the calls
    of one check: the few hundred modules a run imports sit in a few dozen directories, and
    resolving each path whole costs some 1,800 ``lstat`` calls (8 ms of a run); only a file that
    is itself a symlink is resolved again."""
    head, tail = os.path.split(os.path.abspath(path))
    if head not in dirs:
        dirs[head] = os.path.realpath(head)
    full = os.path.join(dirs[head], tail)
    return os.path.realpath(full) if os.path.islink(full) else full


class Reporter:
    def __init__(self, send, *, wanted: frozenset, repo: str, trusted: tuple, blob, watched: dict,  # type: ignore[no-untyped-def]
                 runner_names: frozenset, rewrites, pristine, tests: frozenset) -> None:
        self._send, self._wanted, self._repo, self._blob = send, wanted, repo, blob
        self._trusted, self._in_repo = real_prefixes(trusted), real_prefixes((repo,))
        self._watched, self._runner_names = watched, runner_names
        # run-time rewrites of the tests (pytest_inside/rewrites.py): the protected files compiled
        # by the launcher, the test modules' paths (added as pytest collects them), what each
        # wanted test closes over at the end of collection, and the audit hook
        self._rewrites, self._pristine = rewrites, pristine
        self._is_trusted, self._is_repo = rewrites.realpath_cache(self._trusted), rewrites.realpath_cache(self._in_repo)
        self._tests: set[str] = {os.path.realpath(os.path.join(repo, rel)) for rel in tests}
        self._closes: dict[str, list] = {}
        self.watch = rewrites.Watch(send, self._is_trusted, self._is_test, self._rel)
        self._functions = _functions(watched)  # before any code of the repository has run
        self._hooks: dict = {}
        self._ids: dict[str, str] = {}
        self._failures = self._setups = 0
        self._pm = None

    # ------------------------------------------------------------------ what runs
    @pytest.hookimpl(tryfirst=True)
    def pytest_plugin_registered(self, plugin, manager) -> None:  # type: ignore[no-untyped-def]
        self._pm = manager
        source = _source(plugin)
        if source is not None and under(source, self._trusted):
            return
        self._send("plugin", **self._file(source))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectstart(self, collector) -> None:  # type: ignore[no-untyped-def]
        if isinstance(collector, pytest.Module):
            path = str(getattr(collector, "path", None) or collector.fspath)
            self._tests.add(os.path.realpath(path))
            self._send("module", **self._file(path))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report) -> None:  # type: ignore[no-untyped-def]
        if report.failed:
            self._failures += 1
            self._send("collect_error", id=report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session) -> None:  # type: ignore[no-untyped-def]
        for item in session.items:
            wanted = self._wanted_id(item)
            if wanted is not None:
                self._ids[item.nodeid] = wanted
                self._send("item", id=wanted, xfail=any(True for _ in item.iter_markers("xfail")),
                           origin=self._origin(item))
                self._closes[item.nodeid] = [self._rewrites.closes_over(f) for f in _chain(item)]
        self._send("collected", n=len(session.items))
        self._hooks = _hook_impls(session.config.pluginmanager)

    # ------------------------------------------------------------------ outcomes
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item):  # type: ignore[no-untyped-def]
        wanted = self._ids.get(item.nodeid)
        if wanted is not None:
            self._check_call(item, wanted, before=True)
        outcome = yield
        if wanted is not None:
            self._check_call(item, wanted, before=False)
            exc = outcome.excinfo
            self._send("call", id=wanted, raised=None if exc is None else _kind(exc[1]))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report) -> None:  # type: ignore[no-untyped-def]
        failed = report.failed and not hasattr(report, "wasxfail")
        self._failures += failed
        self._setups += report.when == "setup"
        wanted = self._ids.get(report.nodeid)
        if wanted is not None:
            self._send("report", id=wanted, when=report.when, outcome=report.outcome,
                       xfail=hasattr(report, "wasxfail"))
        elif failed and self._failures <= MAX_OTHER_FAILURES:
            self._send("failure", id=report.nodeid, when=report.when)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus) -> None:  # type: ignore[no-untyped-def]
        self._send("finish", exitstatus=int(exitstatus), failures=self._failures, setups=self._setups,
                   collected=session.testscollected, shadowed=self._shadowed(), native=self._native(),
                   replaced=self._hooks_replaced())

    def replaced(self, fixed: dict) -> list[str]:
        """Called by the launcher once ``pytest.main`` returned (every fixture is torn down and
        pytest has undone its own monkeypatches: ``legacypath`` patches ``Config`` while it runs):
        what was replaced, here and in pytest and pluggy. ``fixed``: this instance's attributes as
        the launcher saw them before the run."""
        mine = [f"the reporter's {name}" for name, value in fixed.items() if vars(self).get(name) is not value]
        mine += [f"the reporter's {name} (hides its method)" for name in vars(self) if name in vars(type(self))]
        return (mine + self._functions_replaced())[:50]

    # ------------------------------------------------------------------ helpers
    def _check_call(self, item, wanted: str, *, before: bool) -> None:  # type: ignore[no-untyped-def]
        """Right before (and after) a wanted test's call: the code of the function pytest calls,
        and of each function it wraps from a file of the work tree, is what that file compiles to;
        what they close over is what it was when collection ended; no trace or profile function
        but the environment's is set."""
        rw = self._rewrites
        chain = _chain(item)
        if before:
            for func in chain:
                code = func.__code__
                if self._is_repo(code.co_filename) and not self._pristine.holds(code, item.config):
                    self._send("rewrite", what=f"{wanted}: its code is not what {self._rel(code.co_filename)} compiles to")
            if [rw.closes_over(f) for f in chain] != self._closes.get(item.nodeid):
                self._send("rewrite", what=f"{wanted}: what it closes over changed after collection")
        for hook in rw.hooks_now():
            if not rw.trusted_hook(hook, self.watch.honest):
                self._send("rewrite", what=f"{wanted}: a trace or profile function of the code under test is set "
                                           f"{'before' if before else 'after'} its call")
                break

    def _is_test(self, path: str) -> bool:
        """A test module, a protected file or a conftest of the work tree (each checked against
        the base commit's bytes)."""
        real = os.path.realpath(path)
        return real in self._tests or (os.path.basename(real) == "conftest.py" and self._is_repo(real))

    def _rel(self, path: str) -> str:
        return os.path.relpath(path, self._repo) if self._is_repo(path) else path

    def _wanted_id(self, item) -> str | None:  # type: ignore[no-untyped-def]
        """The test's id as the task names it: the node id, or (when pytest's rootdir is not the
        repository's root) the path from the root joined to the rest of the node id."""
        nodeid = item.nodeid
        if nodeid in self._wanted:
            return nodeid
        path = str(getattr(item, "path", None) or item.fspath)
        rest = nodeid[nodeid.index("::"):] if "::" in nodeid else ""
        alt = os.path.relpath(path, self._repo) + rest
        return alt if alt in self._wanted else None

    def _origin(self, item) -> dict | None:  # type: ignore[no-untyped-def]
        """The file the test function's code comes from (decorators unwrapped), when it is not the
        environment's: a test function swapped for one defined in the code under test shows here."""
        func = getattr(item, "obj", None)
        with contextlib.suppress(ValueError):  # a __wrapped__ cycle
            func = inspect.unwrap(getattr(func, "__func__", func))
        code = getattr(func, "__code__", None)
        if code is None or under(code.co_filename, self._trusted):
            return None
        return self._file(code.co_filename)

    def _file(self, path: str | None) -> dict:
        if path is None:
            return {"path": None, "blob": None}
        real = os.path.realpath(path)
        try:
            blob = self._blob(real)
        except OSError:
            blob = None
        in_repo = under(real, self._in_repo)
        where = os.path.relpath(real, self._repo) if in_repo else real
        return {"path": where, "blob": blob, "in_repo": in_repo}

    def _shadowed(self) -> list[dict]:
        """Modules of the standard library or the runner that were imported from the work tree."""
        names = set(getattr(sys, "stdlib_module_names", ())) | self._runner_names
        found = []
        dirs: dict[str, str] = {}
        for name, module in list(sys.modules.items()):
            source = getattr(module, "__file__", None)
            if name.split(".")[0] in names and source and under(source, self._in_repo, dirs):
                found.append(self._file(source))
        return found

    def _native(self) -> list[dict]:
        """Extension modules (native code, which no check in the interpreter sees) imported from
        the work tree, for the host to compare with the base commit's files."""
        import importlib.machinery

        suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
        dirs: dict[str, str] = {}
        return [self._file(source) for module in list(sys.modules.values())
                if (source := getattr(module, "__file__", None)) and source.endswith(suffixes)
                and under(source, self._in_repo, dirs)][:50]

    def _functions_replaced(self) -> list[str]:
        """Functions and classes of pytest, pluggy and this plugin that are not what they were
        before the repository's code ran, and modules of theirs that sys.modules no longer holds."""
        changed = [f"{owner}.{key}" for owner, where, key, value, code in self._functions
                   if where.get(key) is not value or (code is not None and _code(value) is not code)]
        changed += [f"sys.modules[{name!r}]" for name, mod in self._watched.items() if sys.modules.get(name) is not mod]
        return changed[:50]

    def _hooks_replaced(self) -> list[str]:
        """Hooks whose implementations changed since collection ended (every conftest is loaded),
        and implementations that are no longer their plugin's own function (pluggy calls the
        function it found at registration: replacing it bypasses the plugin's module)."""
        if self._pm is None:
            return []
        hooks = _hook_impls(self._pm)
        changed = [f"hook {name}" for name, impls in self._hooks.items() if hooks.get(name) != impls]
        for name, caller in list(vars(self._pm.hook).items()):
            for impl in getattr(caller, "get_hookimpls", list)():
                if not _is_own(impl, name):
                    changed.append(f"hook {name} of {impl.plugin_name}")
        return changed[:50]


def _chain(item) -> list:  # type: ignore[no-untyped-def]
    """The test's function and every function its decorators wrap (``__wrapped__``), as plain
    functions."""
    out: list = []
    func = getattr(item, "obj", None)
    while func is not None and len(out) < 20:
        func = getattr(func, "__func__", func)
        if not hasattr(func, "__code__") or any(f is func for f in out):
            break
        out.append(func)
        func = getattr(func, "__wrapped__", None)
    return out


def _kind(exc: BaseException) -> str:
    if isinstance(exc, pytest.xfail.Exception):
        return "xfail"
    if isinstance(exc, pytest.skip.Exception):
        return "skip"
    return "exit" if isinstance(exc, pytest.exit.Exception) else "error"


def _source(plugin) -> str | None:  # type: ignore[no-untyped-def]
    """The file a plugin's code comes from: a module's own; a class's module's (pytest 7 and 8
    register ``legacypath``'s ``LegacyTmpdirPlugin`` class itself, whose type is ``type``, from
    ``builtins``, which has no file); an instance's class's module's."""
    if isinstance(plugin, type(sys)):
        return getattr(plugin, "__file__", None)
    owner = plugin if isinstance(plugin, type) else type(plugin)
    return getattr(sys.modules.get(owner.__module__), "__file__", None)


def _functions(modules: dict) -> list[tuple]:
    """Every function and class of ``modules`` (and every function of those classes), as
    ``(owner, namespace, name, object, its code)``: the live namespace (a module's dict, a class's
    mappingproxy) is looked up again at the end, so a monkeypatch shows as another object there or
    another ``__code__`` on the same function; only what changed is named. A class's members are
    listed once, under the first name it is found by: the modules re-export the same classes (2.6
    times over in pytest 9), and walking a copy again costs time and finds nothing more."""
    out: list[tuple] = []
    walked: set[int] = set()
    for mod_name, module in modules.items():
        namespace = vars(module)
        for name, value in list(namespace.items()):
            if isinstance(value, type):
                out.append((mod_name, namespace, name, value, None))
                if id(value) in walked:
                    continue
                walked.add(id(value))
                members = vars(value)
                for attr, member in list(members.items()):
                    if callable(getattr(member, "__func__", member)):
                        out.append((f"{mod_name}.{name}", members, attr, member, _code(member)))
            elif callable(value):
                out.append((mod_name, namespace, name, value, _code(value)))
    return out


def _code(member) -> object:  # type: ignore[no-untyped-def]
    """A function's code object (through a ``classmethod`` / ``staticmethod``), or None."""
    return getattr(getattr(member, "__func__", member), "__code__", None)


def _is_own(impl, hook: str) -> bool:  # type: ignore[no-untyped-def]
    target = getattr(impl.function, "__func__", impl.function)
    for attr in (hook, getattr(impl.function, "__name__", None)):
        own = getattr(impl.plugin, attr, None) if attr else None
        if own is not None and getattr(own, "__func__", own) is target:
            return True
    return False


def _hook_impls(pm) -> dict[str, tuple]:  # type: ignore[no-untyped-def]
    out = {}
    for name, caller in list(vars(pm.hook).items()):
        get = getattr(caller, "get_hookimpls", None)
        if get is not None:
            out[name] = tuple((impl.plugin_name, id(impl.function)) for impl in get())
    return out
