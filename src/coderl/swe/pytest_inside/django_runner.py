"""The grading run's Django half: the base commit's ``tests/runtests.py`` run in the launcher's test
process with the row's labels, and the per-test records taken from the standard library's
``unittest``, never from Django's runner, its result classes or its output (code the diff can write:
Django's test framework is ``django/test/``, part of the repository under test).

Loaded by ``launcher.py`` (``spec["runner"] == "django"``) after the records pipe, the clean
environment and the nonce's ``send`` are set up, before any code of the repository runs. Before
``runtests.py`` is read it:

- wraps ``unittest.TestCase.run`` (the method every test of ``unittest`` and Django reaches through
  ``TestCase.__call__``): the runner's result object is handed on behind a recorder that notes each
  outcome the standard library's ``run`` reports (success, failure, error, skip, expected failure,
  unexpected success, a failed subtest) before passing it on; the ``test`` record is ours;
- wraps ``unittest.TestCase._callTestMethod`` (Python 3.8+): whether the test method was called and
  what it raised, our own view of the call (a success reported for a call that raised, or that
  never happened, is a finding); a test class whose ``_callTestMethod`` is not ours is a finding;
- wraps ``unittest.case._Outcome.testPartExecutor`` (set-up, the call, each subtest, tear-down):
  each wanted test's part that raised is sent at once (``part_failed``), and after the call the
  test's outcome object must still route its parts and its result through ours (the object is
  reachable from the code under test, which could otherwise route a subtest's failure away);
- compiles the protected test files (``rewrites.Pristine``, plain compilation: no assertion
  rewriting under unittest) and checks at each wanted test's call that the test method, and every
  function of a test file it wraps, holds one of those code objects; the file the method comes
  from is recorded with its blob id for the host to compare with the base commit;
- installs ``rewrites.Watch`` (code swaps, trace hooks, ctypes), plus a finding for any attribute set
  on a class of ``unittest`` during the run (the wrappers replaced, then put back).

A test that never reaches our ``run`` (a ``run`` overridden, a runner that reports without running)
has no records: ``missing``, never passed. ``finish`` carries ``runtests.py``'s exit status and the
failures we counted; the launcher's supervisor reports how the process really ended, so an
``os._exit`` from a test or from the code under test is seen.
"""

from __future__ import annotations

import os
import sys

UNITTEST_MODULES = ("unittest", "unittest.case", "unittest.result", "unittest.suite", "unittest.runner",
                    "unittest.loader", "unittest.main", "unittest.signals", "unittest.util")


def unittest_classes() -> dict[str, object]:
    """``Class.name`` -> value, for every attribute of every class the ``unittest`` modules define
    (``TestCase.run``, ``TestResult.addFailure``, ...): the audit hook sees no attribute set on a
    class before Python 3.12, so the end of the run compares them all."""
    out = {}
    for name in UNITTEST_MODULES:
        module = sys.modules.get(name)
        for cls in list(vars(module).values()) if module is not None else ():
            if isinstance(cls, type) and str(getattr(cls, "__module__", "")).startswith("unittest"):
                for attr, value in list(vars(cls).items()):
                    out[f"{cls.__name__}.{attr}"] = value
    return out


def _no_rewrite(tree, source, path, config) -> None:  # type: ignore[no-untyped-def]
    """unittest runs test modules as Python compiles them: ``Pristine``'s rewritten variant is plain."""


def test_ids(test) -> list[str]:  # type: ignore[no-untyped-def]
    """The names SWE-bench's Django rows give a test: ``name (module.Class)`` (unittest before
    Python 3.11), ``name (module.Class.name)`` (3.11+), and the first line of its docstring (what
    verbosity 2 prints on the line that ends ``... ok`` when the test has one)."""
    cls = type(test)
    name = getattr(test, "_testMethodName", "")
    where = f"{cls.__module__}.{cls.__qualname__}"
    ids = [f"{name} ({where})", f"{name} ({where}.{name})"]
    doc = getattr(test, "_testMethodDoc", None)
    if doc:
        first = doc.strip().split("\n")[0].strip()
        if first:
            ids.append(first)
    return ids


class Run:
    """The wrappers and the state of one grading run (see the module docstring)."""

    def __init__(self, spec: dict, send, blob, rewrites) -> None:  # type: ignore[no-untyped-def]
        import unittest
        import unittest.case

        self.repo = spec.get("repo", "/repo")
        self.tests_dir = os.path.join(self.repo, "tests")
        self.send, self.blob, self.rewrites = send, blob, rewrites
        self.wanted = frozenset(spec["wanted"])
        self.case = unittest.case.TestCase
        self.failure_exception = unittest.case.TestCase.failureException
        self.skip_exception = unittest.case.SkipTest
        self.original_run = unittest.case.TestCase.run
        self.original_call = getattr(unittest.case.TestCase, "_callTestMethod", None)
        self.outcome_class = getattr(unittest.case, "_Outcome", None)
        self.original_part = getattr(self.outcome_class, "testPartExecutor", None)
        trusted = tuple(os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, spec["site_packages"],
                                                       os.path.dirname(os.path.abspath(__file__))))
        self.is_trusted = rewrites.realpath_cache(trusted)
        self.is_repo = rewrites.realpath_cache((os.path.realpath(self.repo),))
        self.in_tests = rewrites.realpath_cache((os.path.realpath(self.tests_dir),))
        self.pristine = rewrites.Pristine(_no_rewrite, __import__("ast").parse, compile)
        for rel in spec["protected"]:
            if rel.endswith(".py"):
                self.pristine.add(os.path.join(self.repo, rel))
        self.watch = rewrites.Watch(send, self.is_trusted, self.in_test_files, self.rel)
        self.current: tuple | None = None
        self.failures = self.ran = 0
        self.findings = 0

    # ------------------------------------------------------------------ installed before the run
    def install(self) -> None:
        run, call, part = self._run(), self._call(), self._part()
        self.case.run = run
        if self.original_call is not None:
            self.case._callTestMethod = call
        if self.original_part is not None:
            self.outcome_class.testPartExecutor = part
        self.ours = (run, call, part)
        self.classes = unittest_classes()  # with our wrappers in: what must still be there at the end
        sys.addaudithook(self.audit)  # for the rest of the process: no code can remove either hook
        sys.addaudithook(self.watch)  # its own hook: it finds the event's caller a fixed number of frames up

    def replaced(self) -> list[str]:
        """Which attributes of unittest's classes (our wrappers among them) are not what they were
        before any code of the repository ran (``Class.name``)."""
        now = unittest_classes()
        return sorted(name for name in {*self.classes, *now} if self.classes.get(name) is not now.get(name))[:10]

    def audit(self, event: str, args: tuple) -> None:
        if event == "object.__setattr__" or event == "object.__delattr__":
            target = args[0]
            if isinstance(target, type) and str(getattr(target, "__module__", "")).startswith("unittest") \
                    and self.findings < 20:
                self.findings += 1
                self.send("rewrite", what=f"{target.__name__}.{args[1]} of unittest set during the run")

    def in_test_files(self, path: str) -> bool:
        """A code object's file is one under ``tests/``: never a pseudo-file (``<string>``: code
        made by ``exec``/``eval``, as ``collections.namedtuple`` makes ``__new__`` and then sets its
        ``__defaults__``), which ``in_tests`` would resolve against the working directory, ``tests/``.
        (``origin`` still counts a test method compiled from no file as foreign code.)"""
        return not (path.startswith("<") and path.endswith(">")) and self.in_tests(path)

    def _run(self):  # type: ignore[no-untyped-def]
        me = self

        def run(self, result=None):  # type: ignore[no-untyped-def]
            if result is None:
                return me.original_run(self, result)
            outcomes: list[str] = []
            calls: list[str | None] = []
            recorder = Recorder(result, outcomes, me)
            outer, me.current = me.current, (self, calls, recorder)
            try:
                return me.original_run(self, recorder)
            finally:
                me.current = outer
                me.record(self, outcomes, calls)

        return run

    def _call(self):  # type: ignore[no-untyped-def]
        me = self

        def _callTestMethod(self, method):  # type: ignore[no-untyped-def]  # noqa: N802 - unittest's name
            current = me.current
            if current is None or current[0] is not self:
                return me.original_call(self, method)
            current[1].append(None)
            try:
                return me.original_call(self, method)
            except BaseException as exc:
                current[1][-1] = type(exc).__name__
                raise
            finally:
                me.check_outcome(self, current[2])

        return _callTestMethod

    def _part(self):  # type: ignore[no-untyped-def]
        """unittest's ``_Outcome.testPartExecutor`` (set-up, the call, each subtest, tear-down),
        with each part that raised sent at once as a ``part_failed`` record: unittest's outcome
        object, which routes a subtest's failure to the result, is reachable from the code under
        test, and a record already written cannot be taken back."""
        import contextlib

        me, original = self, self.original_part

        @contextlib.contextmanager
        def testPartExecutor(outcome, test_case, *args, **kwargs):  # type: ignore[no-untyped-def]  # noqa: N802
            with original(outcome, test_case, *args, **kwargs):
                try:
                    yield
                except BaseException as exc:
                    me.part_failed(outcome, test_case, exc)
                    raise

        return testPartExecutor

    def part_failed(self, outcome, test_case, exc: BaseException) -> None:  # type: ignore[no-untyped-def]
        if isinstance(exc, (self.skip_exception, KeyboardInterrupt)) or type(exc).__name__ == "_ShouldStop" \
                or getattr(outcome, "expecting_failure", False):
            return
        test = getattr(test_case, "test_case", test_case)  # a subtest's test
        ids = test_ids(test)
        if self.wanted.intersection(ids):
            self.send("part_failed", ids=ids, raised=type(exc).__name__)

    def check_outcome(self, test, recorder) -> None:  # type: ignore[no-untyped-def]
        """After the test method's call: unittest's outcome object of the test still routes its
        parts through our ``testPartExecutor`` and its result to our recorder."""
        outcome = getattr(test, "_outcome", None)
        if outcome is None or self.original_part is None:
            return
        if "testPartExecutor" in vars(outcome) or vars(type(outcome)).get("testPartExecutor") is not self.ours[2] \
                or getattr(outcome, "result", recorder) is not recorder:
            self.send("rewrite", what=f"unittest's outcome object of {test_ids(test)[0]} changed during its call")

    # ------------------------------------------------------------------ records
    def record(self, test, outcomes: list[str], calls: list) -> None:  # type: ignore[no-untyped-def]
        self.ran += 1
        status = _status(outcomes)
        if status in ("FAILED", "ERROR"):  # what unittest's wasSuccessful() counts against the run
            self.failures += 1
        ids = test_ids(test)
        if not self.wanted.intersection(ids):
            return
        fields = {"ids": ids, "status": status, "outcomes": outcomes[:10], "calls": calls[:5],
                  "call_seen": self.original_call is not None}  # Python before 3.8: unittest has no _callTestMethod
        if self.original_call is not None and getattr(type(test), "_callTestMethod", None) is not self.ours[1]:
            fields["call_overridden"] = True
        fields.update(self.origin(test))
        self.send("test", **fields)

    def origin(self, test) -> dict:  # type: ignore[no-untyped-def]
        """The test method's file (decorators unwrapped) and whether every function of a test
        file on the way holds pristine code."""
        func = getattr(test, getattr(test, "_testMethodName", ""), None)
        func = getattr(func, "__func__", func)
        foreign = []
        seen = 0
        while func is not None and seen < 20:
            seen += 1
            code = getattr(func, "__code__", None)
            if code is not None and self.in_tests(code.co_filename) and not self.pristine.holds(code, None):
                foreign.append(f"{code.co_name} ({self.rel(code.co_filename)})")
            inner = getattr(func, "__wrapped__", None)
            if inner is None:
                break
            func = getattr(inner, "__func__", inner)
        code = getattr(func, "__code__", None)
        out: dict = {"foreign_code": foreign}
        if code is not None and not self.is_trusted(code.co_filename):
            out["origin"] = self.file(code.co_filename)
        return out

    def modules(self) -> None:
        """Every module imported from the tests directory, with its blob id (the host compares it
        with the base commit, or the test patch's bytes); a module loaded from an archive there (a
        zipped egg) as the archive's file (``file``)."""
        sent = set()
        for module in list(sys.modules.values()):
            source = getattr(module, "__file__", None)
            if source and source.endswith(".py") and self.in_tests(source):
                record = self.file(source)
                if record["path"] not in sent:
                    sent.add(record["path"])
                    self.send("module", **record)

    def file(self, path: str) -> dict:
        real = self.rewrites.archive_of(os.path.realpath(path))  # a member of an archive: the archive
        try:
            blob = self.blob(real)
        except OSError:
            blob = None
        in_repo = self.is_repo(real)
        return {"path": os.path.relpath(real, self.repo) if in_repo else real, "blob": blob, "in_repo": in_repo}

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.repo) if self.is_repo(path) else path


class Recorder:
    """The runner's result, with each outcome the standard library's ``TestCase.run`` reports noted
    on the way (the runner's own result class is the code under test's: never read)."""

    def __init__(self, result, outcomes: list[str], run: Run) -> None:  # type: ignore[no-untyped-def]
        self._result, self._outcomes, self._run = result, outcomes, run

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._result, name)

    def _pass_on(self, name: str, *args) -> None:  # type: ignore[no-untyped-def]
        method = getattr(self._result, name, None)
        if method is not None:
            method(*args)

    def addSuccess(self, test) -> None:  # type: ignore[no-untyped-def]  # noqa: N802 - unittest's names
        self._outcomes.append("success")
        self._pass_on("addSuccess", test)

    def addFailure(self, test, err) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        self._outcomes.append("failure")
        self._pass_on("addFailure", test, err)

    def addError(self, test, err) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        self._outcomes.append("error")
        self._pass_on("addError", test, err)

    def addSkip(self, test, reason) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        self._outcomes.append("skip")
        self._pass_on("addSkip", test, reason)

    def addExpectedFailure(self, test, err) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        self._outcomes.append("expected_failure")
        self._pass_on("addExpectedFailure", test, err)

    def addUnexpectedSuccess(self, test) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        self._outcomes.append("unexpected_success")
        self._pass_on("addUnexpectedSuccess", test)

    def addSubTest(self, test, subtest, err) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        if err is not None:
            self._outcomes.append("subtest_failure" if issubclass(err[0], self._run.failure_exception)
                                  else "subtest_error")
        self._pass_on("addSubTest", test, subtest, err)


def _status(outcomes: list[str]) -> str:
    """A test's status from what ``run`` reported (SWE-bench's names): it passed only with one
    success and no failed subtest; an expected failure is not a pass (SWE-bench's Django log parser
    reads none)."""
    if any(o in ("error", "subtest_error") for o in outcomes):
        return "ERROR"
    if any(o in ("failure", "subtest_failure", "unexpected_success") for o in outcomes):
        return "FAILED"
    if outcomes == ["success"]:
        return "PASSED"
    if "skip" in outcomes:
        return "SKIPPED"
    if "expected_failure" in outcomes:
        return "XFAIL"
    return "missing" if not outcomes else "FAILED"


def run(spec: dict, send, repo_paths: list[str], blob, rewrites) -> int:  # type: ignore[no-untyped-def]
    """``runtests.py`` with the spec's arguments under the records; its exit status."""
    import runpy
    import tempfile

    state = Run(spec, send, blob, rewrites)
    send("start", runner="django", python=sys.version.split()[0])
    if spec.get("byte_code") == "pristine":  # the snapshot's byte code, read-only (launcher.byte_code)
        sys.dont_write_bytecode = True
    else:
        sys.pycache_prefix = tempfile.mkdtemp(prefix="pycache-", dir="/tmp")
    sys.path.extend(repo_paths)
    sys.path.append(state.tests_dir)  # runtests.py imports its test apps as top-level packages
    os.chdir(state.tests_dir)
    script = os.path.join(state.tests_dir, "runtests.py")
    sys.argv[:] = [script, *spec["args"]]
    state.install()
    code: object = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    ret = code if isinstance(code, int) and not isinstance(code, bool) else (0 if code in (None, False) else 1)
    state.modules()
    send("finish", exitstatus=ret, failures=state.failures, ran=state.ran, replaced=state.replaced())
    sys.stdout.flush()
    sys.stderr.flush()
    return ret
