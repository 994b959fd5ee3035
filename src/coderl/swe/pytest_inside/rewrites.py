"""Run-time rewrites of the tests: the test function that runs must be the one its pristine file
compiles to, whatever ran between its module's import and its call.

Both halves are made by the launcher before any code of the repository runs (so every function
they call is bound while it is still the environment's own), and used by the reporter:

- ``Pristine``: the protected test files' bytes, read and compiled now the way pytest's assertion
  rewriting compiles a test module (``ast.parse``, ``rewrite_asserts``, ``compile(...,
  dont_inherit=True)``), every code object in them indexed by (first line, name); plainly compiled
  too, when a code object matches no rewritten one (``--assert=plain``, ``PYTEST_DONT_REWRITE``),
  and with the assertion-pass hook when the configuration enables it. Right before each wanted
  test's call the reporter asks whether the function pytest calls, and each function it wraps
  whose code comes from a file of the work tree, holds one of these code objects: one made by an
  import hook, swapped in by another thread, a finalizer, a gc callback or ctypes is not among
  them, whatever route it took. A file no protected path names (a test inherited from a helper
  module) is read and compiled when first asked, through the functions bound here.
- ``Watch``: an audit hook (``sys.addaudithook``; a hook cannot be removed) that reports, as they
  happen, writes of ``__code__`` / ``__defaults__`` / ``__kwdefaults__`` to a function whose code
  comes from a test file or from the runner (a swap undone before the call is still seen); a trace
  or profile function from outside the environment, the standard library and the test files (a
  trace function can jump over an assert or rewrite a test's locals), seen at the next change of
  hooks (the event comes before the change, so a hook set and removed is seen at its removal) and
  by the reporter at each wanted test's call; and, called from code of the work tree that is not a
  test file or a conftest, ctypes' raw memory access (the route around every check above).

Each finding is a ``rewrite`` record, which the host grades ``tampered``.
"""

from __future__ import annotations

import os
import sys

FUNCTION_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
HOOK_EVENTS = frozenset({"sys.settrace", "sys.setprofile", "sys._settraceallthreads", "sys._setprofileallthreads",
                         "sys.monitoring.register_callback"})
MEMORY_EVENTS = frozenset({"ctypes.cdata", "ctypes.string_at", "ctypes.wstring_at", "ctypes.call_function"})
EVENTS = frozenset({"object.__setattr__", "object.__delattr__", "ctypes.dlsym", *HOOK_EVENTS, *MEMORY_EVENTS})
MAX_FINDINGS = 20
RUNNER_DIRS = frozenset({"_pytest", "pluggy", "pytest", "pytest_inside"})  # pytest_inside: the grader's own


class Pristine:
    """The code objects the protected test files compile to (see the module docstring).

    A file is first compiled with only the top-level statements its wanted tests live in (their
    classes and functions, the module's docstring and ``__future__`` imports, which decide how
    the rest compiles): assertion rewriting costs some 80 ms per 1,000 lines, and a task runs a
    few tests of files thousands of lines long. A code object those do not hold is looked for in
    the whole file next, then plainly compiled, then with the assertion-pass hook."""

    VARIANTS = (("rewritten", True), ("plain", True), ("rewritten", False), ("plain", False), ("pass-hook", False))

    def __init__(self, rewrite_asserts, parse, compile_) -> None:  # type: ignore[no-untyped-def]
        import inspect

        self._rewrite, self._parse, self._compile = rewrite_asserts, parse, compile_
        # pytest 5+: rewrite_asserts(tree, source, path, config); 4.x: (tree, path, config), the path
        # a py.path.local (its warning code reads .strpath), as its _rewrite_test passes it
        self._with_source = "source" in inspect.signature(rewrite_asserts).parameters
        self._as_path = str
        if not self._with_source:
            import py

            self._as_path = py.path.local
        self._sources: dict[str, bytes | None] = {}
        self._keep: dict[str, frozenset[str]] = {}
        self._codes: dict[str, dict[tuple[int, str], list]] = {}
        self._done: dict[str, set] = {}

    def add(self, path: str, names: frozenset[str] = frozenset()) -> None:
        """Read ``path`` and compile it as pytest rewrites a test module, ``names`` (the top-level
        classes and functions of its wanted tests) first; now, while every function involved is
        still the runner's own."""
        try:
            with open(path, "rb") as fh:
                self._sources[path] = fh.read()
        except OSError:
            self._sources[path] = None
        self._keep[path], self._codes[path], self._done[path] = names, {}, set()
        self._compiled(path, *self.VARIANTS[0], None)

    def holds(self, code, config) -> bool:  # type: ignore[no-untyped-def]
        """Whether ``code`` is one of the code objects its file compiles to."""
        path = code.co_filename
        if path not in self._sources:
            self.add(path)
        for variant, partial in self.VARIANTS:
            if (partial and not self._keep[path]) or (variant == "pass-hook" and not _pass_hook(config)):
                continue
            if (variant, partial) not in self._done[path]:
                self._compiled(path, variant, partial, config)
            if any(known == code for known in self._codes[path].get((code.co_firstlineno, code.co_name), ())):
                return True
        return False

    def _compiled(self, path: str, variant: str, partial: bool, config) -> None:  # type: ignore[no-untyped-def]
        self._done[path].add((variant, partial))
        source = self._sources[path]
        if source is None:
            return
        try:
            tree = self._parse(source, filename=path)
            if partial:
                tree.body = [node for i, node in enumerate(tree.body) if _kept(node, i, self._keep[path])]
            if variant != "plain":
                args = (tree, source, path, config) if self._with_source else (tree, self._as_path(path), config)
                self._rewrite(*args)
            module = self._compile(tree, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, TypeError):
            return
        index = self._codes[path]
        todo = [module]
        while todo:
            code = todo.pop()
            index.setdefault((code.co_firstlineno, code.co_name), []).append(code)
            todo.extend(c for c in code.co_consts if isinstance(c, type(module)))


def _kept(node, index: int, names: frozenset[str]) -> bool:  # type: ignore[no-untyped-def]
    """A top-level statement a partial compilation keeps: a wanted class or function, the
    module's docstring, a ``__future__`` import."""
    if getattr(node, "name", None) in names:
        return True
    if type(node).__name__ == "ImportFrom" and node.module == "__future__":
        return True
    return index == 0 and type(node).__name__ == "Expr" and isinstance(getattr(node.value, "value", None), str)


def _pass_hook(config) -> bool:  # type: ignore[no-untyped-def]
    try:
        return bool(config is not None and config.getini("enable_assertion_pass_hook"))
    except (ValueError, KeyError, AttributeError):
        return False


class Watch:
    """The audit hook (see the module docstring). ``is_trusted(path)``: the environment, the
    standard library or the grader; ``is_test(path)``: a test file or a conftest (the base
    commit's bytes, checked); ``rel(path)``: for the record."""

    def __init__(self, send, is_trusted, is_test, rel) -> None:  # type: ignore[no-untyped-def]
        import _thread
        import types

        self._send, self._is_trusted, self._is_test, self._rel = send, is_trusted, is_test, rel
        self._function, self._getframe, self._ident = types.FunctionType, sys._getframe, _thread.get_ident
        self._busy: set[int] = set()
        self._sent = 0

    def __call__(self, event: str, args: tuple) -> None:
        if event not in EVENTS:
            return
        me = self._ident()
        if me in self._busy:  # the events our own checks raise (sys._getframe, __code__ reads)
            return
        self._busy.add(me)
        try:
            what = self._judge(event, args)
        except Exception:  # noqa: BLE001 - an odd argument is no finding, and never an error in the run
            what = None
        finally:
            self._busy.discard(me)
        if what and self._sent < MAX_FINDINGS:
            self._sent += 1
            self._send("rewrite", what=what)

    def _judge(self, event: str, args: tuple) -> str | None:
        if event in ("object.__setattr__", "object.__delattr__"):
            target, name = args[0], args[1]
            if isinstance(target, self._function) and name in FUNCTION_ATTRIBUTES:
                path = target.__code__.co_filename
                if self._is_test(path) or self._is_runner(path):
                    return f"{name} of {target.__qualname__} ({self._rel(path)}) set during the run"
            return None
        if event in HOOK_EVENTS:
            # raised before the hook changes: what is set now is what is being replaced or removed,
            # so a hook set and removed again is seen at its removal (whoever set it: an honest
            # project's cProfile is a profiler of the standard library's, and fine)
            hooks = [args[0]] if event == "sys.monitoring.register_callback" and args else hooks_now()
            for hook in hooks:
                if not trusted_hook(hook, self.honest):
                    return f"a trace or profile function of {self._rel(hook_source(hook))} set during the run ({event})"
            return None
        if event == "ctypes.dlsym" and not str(args[1] if len(args) > 1 else "").startswith(("Py", "_Py")):
            return None
        caller = self._caller(("ctypes",))
        if caller is None or self._is_test(caller) or self._is_trusted(caller):
            return None
        return f"raw memory reached through ctypes by {self._rel(caller)} ({event})"

    def honest(self, path: str) -> bool:
        """Code a trace function may come from: the environment's, the standard library's, the
        grader's, a test file's (the base commit's)."""
        return self._is_trusted(path) or self._is_test(path)

    def _is_runner(self, path: str) -> bool:
        parts = path.split("/")
        return self._is_trusted(path) and any(p in RUNNER_DIRS for p in parts[-3:-1])

    def _caller(self, tools: tuple[str, ...]) -> str | None:
        """The file of the nearest frame up the stack that is not the standard library's ``tools``
        (``ctypes``, which reaches the memory on its caller's behalf, looked through) nor the
        import system; None when there is none. A library of the environment that uses ctypes
        itself when the work tree imports it (sqlfluff's ``tblib``) is its own caller, and trusted."""
        frame = self._getframe(3)
        while frame is not None:
            path = frame.f_code.co_filename
            parts = path.split("/")
            in_tool = (len(parts) > 1 and parts[-2] in tools) or parts[-1].rpartition(".")[0] in tools
            if not path.startswith("<frozen") and not (in_tool and self._is_trusted(path)):
                return path
            frame = frame.f_back
        return None


def hook_source(hook) -> str:  # type: ignore[no-untyped-def]
    """Where a hook's code comes from, for the record."""
    code = getattr(getattr(hook, "__func__", hook), "__code__", None)
    if code is not None:
        return code.co_filename
    owner = getattr(hook, "__self__", None)
    return str(getattr(sys.modules.get(type(owner if owner is not None else hook).__module__), "__file__", "?"))


def trusted_hook(hook, is_trusted) -> bool:  # type: ignore[no-untyped-def]
    """Whether a trace or profile function comes from the environment or the standard library: its
    code's file and, for a bound method or a callable object, every class of its instance."""
    if hook is None:
        return True
    code = getattr(getattr(hook, "__func__", hook), "__code__", None)
    if code is not None and not is_trusted(code.co_filename):
        return False
    owner = getattr(hook, "__self__", None)
    classes = type(owner).__mro__ if owner is not None else (() if code is not None else type(hook).__mro__)
    for cls in classes:
        source = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if cls.__module__ != "builtins" and (source is None or not is_trusted(source)):
            return False
    return True


def hooks_now() -> list:
    """The trace and profile functions of this thread and of threads started from now on."""
    import threading

    return [sys.gettrace(), sys.getprofile(), getattr(threading, "_trace_hook", None),
            getattr(threading, "_profile_hook", None)]


def closes_over(func) -> tuple:  # type: ignore[no-untyped-def]
    """What a test function reads that is not its code: the ids of its cells' contents, defaults
    and globals (compared between collection and the call)."""
    cells = []
    for cell in func.__closure__ or ():
        try:
            cells.append(id(cell.cell_contents))
        except ValueError:
            cells.append(None)
    return (tuple(cells), id(func.__defaults__), id(func.__kwdefaults__), id(func.__globals__))


def realpath_cache(prefixes: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """``is_under(path)``: ``path`` (symlinks resolved, each path once) is inside one of
    ``prefixes`` (already resolved)."""
    seen: dict[str, bool] = {}
    real = os.path.realpath

    def is_under(path: str) -> bool:
        if path not in seen:
            p = real(path)
            seen[path] = any(p == top or p.startswith(top.rstrip("/") + "/") for top in prefixes)
        return seen[path]

    return is_under
