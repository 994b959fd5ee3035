"""The grading run's pytest plugin: the per-test records the verdicts are made of.

Loaded by ``launcher.py`` from its read-only path (never by name from ``sys.path``) and handed to
``pytest.main(plugins=[...])``, so it is registered before any conftest or test module is imported.
It writes records through the ``send`` the launcher gives it (an audit event that the launcher's
writer, unreachable from Python objects, turns into an HMAC-keyed line on a pipe to the supervisor,
only when raised by the grader's own code); the host (``coderl.swe.verdicts``) reads them and
cross-checks them. Where code comes from is decided on code objects (``rewrites.Provenance``),
never on the names they carry. What it records:

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

import functools
import os
import sys

import pytest
from _pytest.reports import TestReport

MAX_OTHER_FAILURES = 50
CODE, FUNCTION = type((lambda: None).__code__), type(lambda: None)
# what a Reporter holds from start to end (the rest is counts and state it rebinds as it goes)
FIXED_ATTRIBUTES = ("_send", "_wanted", "_repo", "_in_repo", "_trusted", "_blob", "_watched", "_runner_names", "_functions",
                    "_ids", "_pristine", "_rewrites", "_is_trusted", "_is_repo", "_tests", "_closes", "watch",
                    "_prov", "_plugins", "_called", "_types", "_set_by_plugins")


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


class Baseline:
    """What the reporter compares the run with from pytest's, pluggy's and the grader's modules
    (``watched``), taken before any code of the repository runs: their code objects and the frozen
    standard library's, by identity (``rewrites.Walk``), and their functions and classes
    (``_functions``). The launcher takes it before its go-ahead, off the grading's path; the
    reporter completes the walk with the modules imported since, and takes the functions again
    if the watched modules are not those it was given."""

    def __init__(self, rewrites, watched: dict) -> None:  # type: ignore[no-untyped-def]
        self.watched = dict(watched)
        self.walk = rewrites.Walk().add(list(watched.values()))
        self.functions = _functions(watched)

    def functions_of(self, watched: dict) -> list[tuple]:
        same = watched.keys() == self.watched.keys() and all(self.watched[n] is m for n, m in watched.items())
        return self.functions if same else _functions(watched)


class Reporter:
    def __init__(self, send, *, wanted: frozenset, repo: str, trusted: tuple, blob, watched: dict,  # type: ignore[no-untyped-def]
                 runner_names: frozenset, rewrites, pristine, tests: frozenset, baseline: Baseline | None = None) -> None:
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
        # where code comes from, by identity (``rewrites.Provenance``): every decision below is made on
        # code objects; the runner's and the grader's are walked now, before any code of the repository runs
        # (``baseline``: the launcher's, taken before its go-ahead, completed here)
        self._prov = rewrites.Provenance(pristine, self._is_trusted, self._is_test, self._is_repo, list(watched.values()),
                                         None if baseline is None else baseline.walk)
        self.watch = rewrites.Watch(send, self._is_trusted, self._is_test, self._rel, self._prov)
        # before any code of the repository has run
        self._functions = _functions(watched) if baseline is None else baseline.functions_of(watched)
        self._plugins: dict[int, object] = {}  # every plugin pytest registered, by identity
        self._set_by_plugins: dict[int, list] = {}  # entry of _functions -> what the environment's plugins set
        self._called: dict[str, list] = {}  # each wanted test's function and what it wraps, at the end of collection
        self._types: dict[str, type] = {}  # and its item's class
        self._hooks: dict = {}
        self._ids: dict[str, str] = {}
        self._failures = self._setups = 0
        self._pm = None

    # ------------------------------------------------------------------ what runs
    @pytest.hookimpl(tryfirst=True)
    def pytest_plugin_registered(self, plugin, manager) -> None:  # type: ignore[no-untyped-def]
        """Each plugin's hook implementations, judged by their code objects (a class may claim any
        ``__module__``, a module any ``__file__``): code of the environment passes, code of the
        work tree sends its file for the host to compare with the base commit, code that is not
        what the file it names compiles to is a finding. A module of the work tree with no hook
        implementation still sends its file."""
        self._pm = manager
        self._plugins[id(plugin)] = plugin
        files = []
        if isinstance(plugin, type(sys)):
            source = getattr(plugin, "__file__", None)
            if source is None or not self._is_trusted(source):
                files.append(source)
        for impl in _impls(manager, plugin):
            code = _code(impl.function)
            where = None if code is None else self._prov.where(code)
            if where is None:
                self._send("rewrite", what=f"hook {impl.function!r:.80} of plugin {impl.plugin_name}: its code is not "
                                           f"what {getattr(code, 'co_filename', '?')} compiles to")
            elif where != "trusted":
                files.append(code.co_filename)
        for source in dict.fromkeys(files):
            self._send("plugin", **self._file(source))

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self, early_config) -> None:  # type: ignore[no-untyped-def]
        """The environment's plugins are imported (``-p``), no conftest yet: what they changed in
        pytest as they loaded (hypothesis replaces ``FixtureFunctionMarker.__call__``) is part of
        the environment, when the new function's code is the environment's own."""
        self._prov.config = early_config
        self._rebaseline()

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config) -> None:  # type: ignore[no-untyped-def]
        """The plugins are configured: what they set in pytest then (pytest-subtests sets
        ``TestCaseFunction.addSubTest``, and deletes it again at the end) is the environment's too,
        when the new function's code is the environment's own."""
        self._rebaseline()

    def _rebaseline(self) -> None:
        """Entries of ``_functions`` set since by the environment's code: the new value is accepted
        at the end as well as the one before (pytest undoes its own ``legacypath`` patch of
        ``Config`` when the run ends), and so is the attribute's deletion (a plugin undoing its
        patch by deleting it)."""
        for i, (_owner, where, key, value, code) in enumerate(self._functions):
            now = where.get(key)
            now_code = _code(now)
            if (now is value and now_code is code) or now_code is None:
                continue
            if self._prov.where(now_code) == "trusted":
                self._set_by_plugins.setdefault(i, []).append((now, now_code))

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
        self._prov.config = session.config
        for item in session.items:
            wanted = self._wanted_id(item)
            if wanted is not None:
                self._ids[item.nodeid] = wanted
                chain = _chain(item)
                self._send("item", id=wanted, xfail=any(True for _ in item.iter_markers("xfail")),
                           origin=self._origin(wanted, chain, item))
                self._called[item.nodeid], self._types[item.nodeid] = chain, type(item)
                self._closes[item.nodeid] = [self._rewrites.closes_over(f) for f in chain]
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
            # a subtest's report (pytest-subtests, pytest 9): one of several for the phase, marked
            sub = type(report) is not TestReport and getattr(report, "context", None) is not None
            self._send("report", id=wanted, when=report.when, outcome=report.outcome,
                       xfail=hasattr(report, "wasxfail"), **({"sub": True} if sub else {}))
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
            collected = self._called.get(item.nodeid, [])
            if [id(f) for f in chain] != [id(f) for f in collected]:  # collected: held, so an id is that object
                self._send("rewrite", what=f"{wanted}: the function pytest calls is not the one it collected")
            shadowed = [name for name in list(vars(item)) if isinstance(getattr(type(item), name, None), FUNCTION)]
            if type(item) is not self._types.get(item.nodeid) or shadowed:
                self._send("rewrite", what=f"{wanted}: the item's class or its methods changed after collection "
                                           f"({type(item).__name__}{', ' if shadowed else ''}{', '.join(shadowed)[:80]})")
            for what in self._judged(wanted, chain, item)[0]:
                self._send("rewrite", what=what)
            if [rw.closes_over(f) for f in chain] != self._closes.get(item.nodeid):
                self._send("rewrite", what=f"{wanted}: what it closes over changed after collection")
        for hook in rw.hooks_now():
            if not self._prov.honest(hook):
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

    def _origin(self, wanted: str, chain: list, item) -> dict | None:  # type: ignore[no-untyped-def]
        """At the end of collection: the findings on what pytest will call (``_judged``), and the
        file of the work tree the test's own function comes from, for the host to compare with
        the base commit (a test function swapped for one defined in the code under test shows
        there)."""
        findings, test = self._judged(wanted, chain, item)
        for what in findings:
            self._send("rewrite", what=what)
        return None if test is None else self._file(test.__code__.co_filename)

    def _judged(self, wanted: str, chain: list, item) -> tuple[list[str], object]:  # type: ignore[no-untyped-def]
        """(findings, the test's own function) for what pytest calls, judged on code objects: each
        function's code must be what the file it names compiles to, or a generated proxy that
        only forwards to the environment's code (hypothesis' ``@given``); the innermost must be
        a function of the work tree (through such a proxy: the one its target closes over; for
        a function the environment generated, as ``parameterized.expand`` does, the one it
        closes over, for a test name its file does not define itself: a function generated in
        place of one it does define is the code under test's), not the environment's or the
        standard library's standing in for the test; and a test its file does not decorate must
        be what pytest calls, unwrapped (no wrapper or generated function of the environment's
        put around it by the code under test); and where the file defines the name pytest
        collected, the test must not be another function a file defines by name
        (``test_mod.test_add = test_mod.test_sub``: genuine code, the wrong test)."""
        if not chain:
            return [], None
        prov, findings, test = self._prov, [], None
        for i, func in enumerate(chain):
            code = func.__code__
            where = prov.where(code)
            innermost = i == len(chain) - 1
            if where is None:
                target = prov.forwarded(func)
                if target is None:
                    findings.append(f"{wanted}: its code is not what {self._rel(code.co_filename)} compiles to")
                elif innermost:
                    test = prov.inner(target, code)
            elif innermost and where in ("test", "repo"):
                test = func
            elif innermost and not prov.defines(_item_file(item), _item_name(item)):
                test = prov.generated(func)
        if findings:
            return findings, None
        last = chain[-1].__code__
        if test is None:
            return [f"{wanted}: the function pytest collected is {last.co_name} of {self._rel(last.co_filename)}, "
                    "not a function of the work tree"], None
        # a wrapper of the work tree standing for the test (where == "repo") is the test file's own
        # declaration when that file decorates the name pytest collected (matplotlib's
        # @mpl.style.context over @check_figures_equal, whose wrapper is a function of its own)
        declared = (os.path.realpath(test.__code__.co_filename) != os.path.realpath(_item_file(item))
                    and prov.decorates(_item_file(item), _item_name(item)))
        if (len(chain) > 1 or test is not chain[-1]) and not prov.decorated(test.__code__) and not declared:
            outer = chain[0].__code__
            findings.append(f"{wanted}: pytest calls {outer.co_name} of {self._rel(outer.co_filename)} around a test "
                            "its file does not decorate")
        own, name = test.__code__, _item_name(item)
        if own.co_name != name and prov.defines(_item_file(item), name) and prov.defines(own.co_filename, own.co_name):
            findings.append(f"{wanted}: pytest calls the test {own.co_name} of {self._rel(own.co_filename)} in place of "
                            f"the {name} its file defines")
        return findings, test

    def _file(self, path: str | None) -> dict:
        if path is None:
            return {"path": None, "blob": None}
        real = self._rewrites.archive_of(os.path.realpath(path))  # a member of an archive: the archive
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
        changed = []
        for i, (owner, where, key, value, code) in enumerate(self._functions):
            accepted = [(value, code), *self._set_by_plugins.get(i, [])]
            now = where.get(key)
            if any(now is v and (c is None or _code(v) is c) for v, c in accepted):
                continue
            if i in self._set_by_plugins and key not in where:  # a plugin's own patch, deleted again
                continue
            changed.append(f"{owner}.{key}")
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
                code = _code(impl.function)
                if not _is_own(impl, name):
                    changed.append(f"hook {name} of {impl.plugin_name}")
                elif self._plugins.get(id(impl.plugin)) is not impl.plugin:
                    changed.append(f"hook {name} of {impl.plugin_name}, a plugin pytest never registered")
                elif code is not None and self._prov.where(code) is None:
                    changed.append(f"hook {name} of {impl.plugin_name}, code that is not what its file compiles to")
        return changed[:50]


def _chain(item) -> list:  # type: ignore[no-untyped-def]
    """The test's function and every function its decorators wrap (``__wrapped__``), as plain
    functions."""
    out: list = []
    func = getattr(item, "obj", None)
    while func is not None and len(out) < 20:
        func = getattr(func, "__func__", func)
        if isinstance(func, functools.partial):  # pytest collects a partial of a function too
            func = func.func
            continue
        if not hasattr(func, "__code__") or any(f is func for f in out):
            break
        out.append(func)
        func = getattr(func, "__wrapped__", None)
    return out


def _item_file(item) -> str:  # type: ignore[no-untyped-def]
    return str(getattr(item, "path", None) or item.fspath)


def _item_name(item) -> str:  # type: ignore[no-untyped-def]
    """The name pytest collected the test under, without its parameters' ids."""
    return getattr(item, "originalname", None) or item.name.partition("[")[0]


def _kind(exc: BaseException) -> str:
    if isinstance(exc, pytest.xfail.Exception):
        return "xfail"
    if isinstance(exc, pytest.skip.Exception):
        return "skip"
    return "exit" if isinstance(exc, pytest.exit.Exception) else "error"


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
    """A function's code object (through a ``classmethod`` / ``staticmethod``), or None (a class's
    ``__code__`` may be a descriptor: ``types.FunctionType.__code__``)."""
    code = getattr(getattr(member, "__func__", member), "__code__", None)
    return code if isinstance(code, CODE) else None


def _impls(pm, plugin) -> list:  # type: ignore[no-untyped-def]
    """The hook implementations ``plugin`` registered with ``pm``."""
    out = []
    for caller in pm.get_hookcallers(plugin) or ():
        out += [impl for impl in caller.get_hookimpls() if impl.plugin is plugin]
    return out


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
