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
# another thread's frames: where the grader's writer could be caught running, its cells in f_locals
FRAMES_EVENT = "sys._current_frames"
EVENTS = frozenset({"object.__setattr__", "object.__delattr__", "ctypes.dlsym", FRAMES_EVENT, *HOOK_EVENTS, *MEMORY_EVENTS})
MAX_FINDINGS = 20
RUNNER_DIRS = frozenset({"_pytest", "pluggy", "pytest", "pytest_inside"})  # pytest_inside: the grader's own


class Pristine:
    """The code objects the protected test files compile to (see the module docstring).

    A file is first compiled with only the top-level statements its wanted tests live in (their
    classes and functions, the module's docstring and ``__future__`` imports, which decide how
    the rest compiles): assertion rewriting costs some 80 ms per 1,000 lines, and a task runs a
    few tests of files thousands of lines long. A code object those do not hold is looked for in
    the whole file next, then plainly compiled, then with the assertion-pass hook.

    ``cache``: a directory the host wrote and the sandbox binds read-only (``grading_run.
    fill_pristine``), holding, by ``cache_key`` (the file's path, the variant, the names kept and
    the file's bytes, as read now), the marshalled code objects of those variants that need no
    configuration (``CACHED``), made on the host by this class from the same bytes with the
    environment's own interpreter and pytest: a variant found there is loaded, not compiled; any
    other bytes are compiled here as before. The functions it reads the cache with are bound now."""

    VARIANTS = (("rewritten", True), ("plain", True), ("rewritten", False), ("plain", False), ("pass-hook", False))
    LIBRARY_VARIANTS = (("plain", False), ("rewritten", False))
    CACHED = (("rewritten", True), ("plain", True), ("rewritten", False), ("plain", False))

    def __init__(self, rewrite_asserts, parse, compile_, cache: str | None = None) -> None:  # type: ignore[no-untyped-def]
        import hashlib
        import inspect
        import marshal

        self._rewrite, self._parse, self._compile, self._open = rewrite_asserts, parse, compile_, open
        self._cache, self._sha256, self._loads, self._code_type = cache, hashlib.sha256, marshal.loads, type(_plain.__code__)
        self._type, self._sorted = type, sorted
        # pytest 5+: rewrite_asserts(tree, source, path, config); 4.x: (tree, path, config), the path
        # a py.path.local (its warning code reads .strpath), as its _rewrite_test passes it
        self._with_source = "source" in inspect.signature(rewrite_asserts).parameters
        self._as_path = str
        if not self._with_source:
            import py

            self._as_path = py.path.local
        self._sources: dict[str, bytes | None] = {}
        self._decorated: dict[str, frozenset[int]] = {}
        self._defined: dict[str, frozenset[str]] = {}
        self._keep: dict[str, frozenset[str]] = {}
        self._names: dict[str, str] = {}  # the names kept, as ``cache_key`` takes them
        self._codes: dict[str, dict[tuple[int, str], list]] = {}
        self._done: dict[str, set] = {}

    def add(self, path: str, names: frozenset[str] = frozenset(), *, now: bool = True, source: bytes | None = None) -> None:
        """Read ``path`` (or take its bytes, ``source``: the host's ``launcher.fill_pristine``) and
        (``now``) compile it as pytest rewrites a test module, ``names`` (the top-level classes and
        functions of its wanted tests) first; now, while every function involved is still the
        runner's own."""
        try:
            if source is None:
                with self._open(path, "rb") as fh:
                    source = fh.read()
        except OSError:
            source = None
        self._sources[path] = source
        self._keep[path], self._codes[path], self._done[path] = names, {}, set()
        self._names[path] = "\n".join(self._sorted(names))
        if now:
            self._compiled(path, *self.VARIANTS[0], None)

    def holds(self, code, config, *, library: bool = False) -> bool:  # type: ignore[no-untyped-def]
        """Whether ``code`` is one of the code objects its file compiles to. ``library``: a file of
        the environment or the standard library, compiled plainly first (pytest rewrites only the
        asserts of its plugins' modules)."""
        path = code.co_filename
        if path not in self._sources:
            self.add(path, now=False)
        for variant, partial in (self.LIBRARY_VARIANTS if library else self.VARIANTS):
            if (partial and not self._keep[path]) or (variant == "pass-hook" and not _pass_hook(config)):
                continue
            if (variant, partial) not in self._done[path]:
                self._compiled(path, variant, partial, config)
            if any(known == code for known in self._codes[path].get((code.co_firstlineno, code.co_name), ())):
                return True
        return False

    def decorated(self, code) -> bool:  # type: ignore[no-untyped-def]
        """Whether the function ``code`` (one ``holds`` found) is decorated in its file, itself or
        by a class around it (``@mock.patch`` on a test class wraps each of its tests)."""
        path = code.co_filename
        if path not in self._decorated:
            self._decorated[path] = _decorated_lines(self._parse, self._sources.get(path))
        return code.co_firstlineno in self._decorated[path]

    def decorates(self, path: str, name: str) -> bool:
        """Whether the file at ``path`` decorates the function ``name`` it defines (itself or by a
        class around it), read from its bytes as they were first read in the run: what pytest calls
        for it may then be a wrapper the decorator made (matplotlib's ``@check_figures_equal``
        returns a function of its own, ``@mpl.style.context`` wraps that)."""
        if path not in self._sources:
            self.add(path, now=False)
        return name in _decorated_names(self._parse, self._sources.get(path))

    def defines(self, path: str, name: str) -> bool:
        """Whether the file at ``path`` defines a function ``name`` itself (at its top level or in
        a class), read from its bytes as they were first read in the run."""
        if path not in self._sources:
            self.add(path, now=False)
        if path not in self._defined:
            self._defined[path] = _defined_names(self._parse, self._sources.get(path))
        return name in self._defined[path]

    def _compiled(self, path: str, variant: str, partial: bool, config) -> None:  # type: ignore[no-untyped-def]
        self._done[path].add((variant, partial))
        module = self._cached(path, variant, partial, config)
        if module is None:
            module = self.compile(path, variant, partial, config)
        if module is None:
            return
        index = self._codes[path]
        todo = [module]
        while todo:
            code = todo.pop()
            index.setdefault((code.co_firstlineno, code.co_name), []).append(code)
            todo.extend(c for c in code.co_consts if isinstance(c, type(module)))


    def compile(self, path: str, variant: str, partial: bool, config):  # type: ignore[no-untyped-def]
        """The module code object of ``path``'s bytes (as first read) in one variant, or None."""
        source = self._sources[path]
        if source is None:
            return None
        try:
            tree = self._parse(source, filename=path)
            if partial:
                tree.body = [node for i, node in enumerate(tree.body) if _kept(node, i, self._keep[path])]
            if variant != "plain":
                args = (tree, source, path, config) if self._with_source else (tree, self._as_path(path), config)
                self._rewrite(*args)
            return self._compile(tree, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, TypeError):
            return None

    def key(self, path: str, variant: str, partial: bool) -> str | None:
        """``cache_key`` of ``path``'s bytes as first read, or None (unreadable)."""
        source = self._sources[path]
        return None if source is None else cache_key(self._sha256, path, variant, partial, self._names[path], source)

    def _cached(self, path: str, variant: str, partial: bool, config):  # type: ignore[no-untyped-def]
        """The variant's module code object from the host's cache, or None (no cache, not there, a
        variant that depends on the configuration)."""
        if self._cache is None or (variant, partial) not in self.CACHED or _pass_hook(config):
            return None
        key = self.key(path, variant, partial)
        if key is None:
            return None
        try:
            with self._open(self._cache + "/" + key, "rb") as fh:
                module = self._loads(fh.read())
        except (OSError, ValueError, EOFError, TypeError):
            return None
        return module if self._type(module) is self._code_type else None


def cache_key(sha256, path: str, variant: str, partial: bool, names: str, source: bytes) -> str:  # type: ignore[no-untyped-def]
    """Where ``Pristine``'s cache holds one variant of a file's code: the hash of the file's path (the
    code objects' ``co_filename``), the variant, the names a partial compilation keeps (sorted, one a
    line), and its bytes."""
    h = sha256(b"coderl pristine 1\0")
    for part in (path, variant, "partial" if partial else "whole", names if partial else ""):
        h.update(part.encode("utf-8", "surrogateescape") + b"\0")
    h.update(source)
    return h.hexdigest()


def _decorated_functions(parse, source: bytes | None) -> list:  # type: ignore[no-untyped-def]
    """The function nodes ``source`` defines at its top level and in its classes that a decorator
    wraps, with whether it is their own decorator (else one of a class they are defined in)."""
    try:
        tree = parse(source or b"")
    except (SyntaxError, ValueError):
        return []
    found = []
    todo = [(node, False) for node in tree.body]
    while todo:
        node, wrapped = todo.pop()
        kind = type(node).__name__
        own = bool(getattr(node, "decorator_list", None))
        if kind in ("FunctionDef", "AsyncFunctionDef") and (own or wrapped):
            found.append((node, own))
        if kind == "ClassDef":
            todo.extend((child, wrapped or own) for child in node.body)
    return found


def _decorated_lines(parse, source: bytes | None) -> frozenset[int]:  # type: ignore[no-untyped-def]
    """The first lines (``co_firstlineno``) of the functions in ``source`` that a decorator wraps."""
    return frozenset(node.decorator_list[0].lineno if own else node.lineno
                     for node, own in _decorated_functions(parse, source))


def _decorated_names(parse, source: bytes | None) -> frozenset[str]:  # type: ignore[no-untyped-def]
    """The names of the functions ``source`` defines at its top level and in its classes that a
    decorator wraps."""
    return frozenset(node.name for node, _ in _decorated_functions(parse, source))


def _defined_names(parse, source: bytes | None) -> frozenset[str]:  # type: ignore[no-untyped-def]
    """The names of the functions ``source`` defines at its top level and in its classes."""
    try:
        tree = parse(source or b"")
    except (SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        kind = type(node).__name__
        if kind in ("FunctionDef", "AsyncFunctionDef"):
            names.add(node.name)
        elif kind == "ClassDef":
            todo.extend(node.body)
    return frozenset(names)


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
    commit's bytes, checked); ``rel(path)``: for the record; ``provenance``: where code comes from
    (``Provenance``, decided on code objects; by default one that compiles the files ``is_test``
    names plainly)."""

    def __init__(self, send, is_trusted, is_test, rel, provenance=None) -> None:  # type: ignore[no-untyped-def]
        import _thread
        import ast
        import types

        if provenance is None:
            provenance = Provenance(Pristine(_plain, ast.parse, compile), is_trusted, is_test, is_test, [])
        self._send, self._prov, self._is_test, self._is_trusted, self._rel = send, provenance, is_test, is_trusted, rel
        self._function, self._getframe, self._ident = types.FunctionType, sys._getframe, _thread.get_ident
        self._busy: set[int] = set()
        self._sent = 0

    def __call__(self, event: str, args: tuple) -> None:
        if event not in EVENTS:
            return
        me = self._ident()
        if me in self._busy:  # the events our own checks raise (sys._getframe, __code__ reads, open)
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
                if not self._prov.honest(hook):
                    return f"a trace or profile function of {self._rel(hook_source(hook))} set during the run ({event})"
            return None
        if event == "ctypes.dlsym" and not str(args[1] if len(args) > 1 else "").startswith(("Py", "_Py")):
            return None
        caller = self._caller(("ctypes",))
        if caller is None or self._prov.where(caller) in ("trusted", "test"):
            return None
        if event == FRAMES_EVENT:
            return f"every thread's frames read by {self._rel(caller.co_filename)} ({event})"
        return f"raw memory reached through ctypes by {self._rel(caller.co_filename)} ({event})"

    def _is_runner(self, path: str) -> bool:
        parts = path.split("/")
        return self._is_trusted(path) and any(p in RUNNER_DIRS for p in parts[-3:-1])

    def _caller(self, tools: tuple[str, ...]):  # type: ignore[no-untyped-def]
        """The code of the nearest frame up the stack that is not the standard library's ``tools``
        (``ctypes``, which reaches the memory on its caller's behalf, looked through) nor the
        import system, each known by its code object (a frame whose code only claims to be
        ctypes' is the caller); None when there is none. A library of the environment that uses
        ctypes itself when the work tree imports it (sqlfluff's ``tblib``) is its own caller, and
        trusted."""
        frame = self._getframe(3)
        while frame is not None:
            code = frame.f_code
            parts = code.co_filename.split("/")
            in_tool = (len(parts) > 1 and parts[-2] in tools) or parts[-1].rpartition(".")[0] in tools
            looked_through = in_tool or code.co_filename.startswith("<frozen")
            if not (looked_through and self._prov.where(code) == "trusted"):
                return code
            frame = frame.f_back
        return None


class Provenance:
    """Where code comes from, decided on the code object, never on a name: ``co_filename``, a
    class's ``__module__`` and a function's ``__qualname__`` are whatever the code that made them
    chose. ``where(code)`` is ``"trusted"`` (the environment, the standard library, the grader),
    ``"test"`` (a test file or a conftest of the work tree) or ``"repo"`` (another file of the
    work tree) only when ``code`` is one of the code objects the file it names compiles to
    (``Pristine``: that file's bytes, read and compiled now; the runner's, the grader's and the
    frozen standard library's own code objects, walked before any code of the repository runs,
    are known by identity), else None: code compiled under a borrowed name, or from no file."""

    def __init__(self, pristine, is_trusted, is_test, is_repo, modules, walk=None) -> None:  # type: ignore[no-untyped-def]
        """``walk``: a ``Walk`` begun earlier (the launcher's, before its go-ahead), completed here
        with ``modules`` and the frozen modules imported since."""
        import gc
        import types

        self._pristine, self._is_trusted, self._is_test, self._is_repo = pristine, is_trusted, is_test, is_repo
        self._function, self._method, self._code = types.FunctionType, types.MethodType, types.CodeType
        self._mro, self._referents, self._isabs = type.__dict__["__mro__"].__get__, gc.get_referents, os.path.isabs
        import dis

        self._instructions = dis.get_instructions
        self._known = (walk if walk is not None else Walk()).add(modules).known
        self._seen: dict[int, tuple[object, str | None]] = {}
        self.config = None  # pytest's, once it is configured: whether asserts get the pass hook

    def where(self, code) -> str | None:  # type: ignore[no-untyped-def]
        hit = self._seen.get(id(code))
        if hit is not None and hit[0] is code:
            return hit[1]
        path = code.co_filename
        found = None
        if self._known.get(id(code)) is code:
            found = "trusted"
        elif not self._isabs(path):
            found = None
        elif self._is_trusted(path):
            found = "trusted" if self._pristine.holds(code, self.config, library=True) else None
        elif self._is_repo(path) and self._pristine.holds(code, self.config):
            found = "test" if self._is_test(path) else "repo"
        self._seen[id(code)] = (code, found)
        return found

    def decorated(self, code) -> bool:  # type: ignore[no-untyped-def]
        return self._pristine.decorated(code)

    def decorates(self, path: str, name: str) -> bool:
        return self._pristine.decorates(path, name)

    def defines(self, path: str, name: str) -> bool:
        return self._pristine.defines(path, name)

    def forwarded(self, func):  # type: ignore[no-untyped-def]
        """The function of the environment that ``func`` forwards its call to, when ``func`` is a
        generated forwarding proxy (hypothesis' ``@given``: ``def test_x(a): return f(a)``, its
        code then renamed and placed at the test's file and line, which no file compiles to): code
        that reads no global, no attribute and no variable but its arguments and its one free
        variable, calls that and returns; its free variable a function whose code is the
        environment's own. Else None."""
        code = func.__code__
        if len(code.co_freevars) != 1 or code.co_names or not func.__closure__:
            return None
        if any(c is not None and not isinstance(c, (str, tuple)) for c in code.co_consts):
            return None
        if not {i.opname for i in self._instructions(code)} <= FORWARDING_OPS:
            return None
        target = func.__closure__[0].cell_contents if _filled(func.__closure__[0]) else None
        if isinstance(target, self._function) and self.where(target.__code__) == "trusted":
            return target
        return None

    def generated(self, func):  # type: ignore[no-untyped-def]
        """The function of the work tree that ``func``, a genuine function of the environment
        collected as a test, was generated from and calls: ``parameterized.expand`` puts a
        ``standalone_func`` per parameter set in the test's class or module, which closes over the
        test (or ``mock.patch``'s wrappers of it) and drops ``__wrapped__``. Found as ``inner``
        finds it; None when it holds none or several. The caller asks this only for a name the
        test file does not define itself, and still asks that the file decorates the test found:
        else the code under test put the function there."""
        return self.inner(func, func.__code__)

    def inner(self, target, claimed):  # type: ignore[no-untyped-def]
        """The function of the work tree (genuine code) that ``target``, a function of the
        environment a proxy forwards to, runs as the test: found among what it holds (its cells,
        and the attributes of what they hold, ``MAX_DEPTH`` deep: hypothesis' ``wrapped_test``
        reads the test from ``proxy.hypothesis.inner_test``), the one at the file, line and name
        the proxy's code claims when there are several (a strategy may hold functions of the test
        file too); None when there is none or no single one."""
        found: list = []
        seen: set[int] = set()
        todo = [(c.cell_contents, 0) for c in target.__closure__ or () if _filled(c)]
        while todo:
            value, depth = todo.pop()
            value = getattr(value, "__func__", value) if isinstance(value, self._method) else value
            if id(value) in seen or depth > MAX_DEPTH or isinstance(value, (type, type(sys))):
                continue
            seen.add(id(value))
            if isinstance(value, self._function) and self.where(value.__code__) in ("test", "repo"):
                found.append(value)
                continue
            attrs = getattr(value, "__dict__", None)
            if isinstance(attrs, dict):
                todo.extend((v, depth + 1) for v in list(attrs.values()))
        at = [f for f in found if (f.__code__.co_filename, f.__code__.co_firstlineno, f.__code__.co_name)
              == (claimed.co_filename, claimed.co_firstlineno, claimed.co_name)]
        return at[0] if len(at) == 1 else found[0] if len(found) == 1 else None

    def honest(self, obj, depth: int = 0) -> bool:  # type: ignore[no-untyped-def]
        """Whether a callable (a trace or profile function) runs only code of the environment,
        the standard library or the test files: a function's code and the callables it closes
        over; a bound method's function and instance; any other object's classes' functions and
        the callables it holds (a ``functools.partial``'s function, an instance's attributes).
        Looked into ``MAX_DEPTH`` levels deep."""
        if obj is None or depth > MAX_DEPTH:
            return True
        if isinstance(obj, self._function):
            if self.where(obj.__code__) not in ("trusted", "test"):
                return False
            held = [c.cell_contents for c in obj.__closure__ or () if _filled(c)]
            held += [*(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()]
            return all(self.honest(h, depth + 1) for h in held if callable(h) and not isinstance(h, type))
        if isinstance(obj, self._method):
            return self.honest(obj.__func__, depth + 1) and self.honest(obj.__self__, depth + 1)
        if isinstance(obj, (type, type(sys))):
            return True  # a class or a module: its code is judged where it is called from an instance
        for cls in self._mro(type(obj)):
            for member in list(vars(cls).values()):
                func = getattr(member, "__func__", member) if isinstance(member, (classmethod, staticmethod)) else member
                if isinstance(func, self._function) and self.where(func.__code__) not in ("trusted", "test"):
                    return False
        for ref in self._referents(obj):
            values = list(ref.values()) if isinstance(ref, dict) else [ref]
            for value in values:
                if isinstance(value, (self._function, self._method)) and not self.honest(value, depth + 1):
                    return False
        return True


class Walk:
    """Code objects known by identity (``Provenance``): every code object of the modules given to
    ``add`` and of the frozen standard library's modules imported by then, each module walked once.
    The launcher begins it before its go-ahead, while the host still applies the diff (nothing of
    the repository has run, and nothing but the grader's code runs before the reporter completes
    it with the modules imported since), so the walk of pytest's, pluggy's and the grader's code
    is off the grading's path; what it knows is what one walk made when the reporter starts knows."""

    def __init__(self) -> None:
        self.known: dict[int, object] = {}
        self._walked: dict[int, object] = {}

    def add(self, modules) -> Walk:  # type: ignore[no-untyped-def]
        frozen = [m for m in list(sys.modules.values()) if getattr(getattr(m, "__spec__", None), "origin", None) == "frozen"]
        for module in [*modules, *frozen]:
            if self._walked.get(id(module)) is module:
                continue
            self._walked[id(module)] = module
            for code in module_codes(module):
                self.known[id(code)] = code
        return self


MAX_DEPTH = 3
# the instructions of a call forwarded with its own arguments (plain, keyword, * and **, awaited),
# from Python 3.8 to 3.14
FORWARDING_OPS = frozenset({
    "RESUME", "COPY_FREE_VARS", "MAKE_CELL", "NOP", "CACHE", "EXTENDED_ARG", "PUSH_NULL", "LOAD_DEREF", "LOAD_FAST",
    "LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW", "LOAD_FAST_BORROW_LOAD_FAST_BORROW", "LOAD_CONST", "KW_NAMES",
    "PRECALL", "CALL", "CALL_KW", "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX", "BUILD_TUPLE", "BUILD_LIST",
    "LIST_EXTEND", "LIST_TO_TUPLE", "CALL_INTRINSIC_1", "BUILD_MAP", "DICT_MERGE", "DICT_UPDATE", "RETURN_VALUE",
    "RETURN_CONST", "RETURN_GENERATOR", "POP_TOP", "GET_AWAITABLE", "SEND", "END_SEND", "YIELD_VALUE",
    "JUMP_BACKWARD_NO_INTERRUPT", "CLEANUP_THROW", "SETUP_FINALLY", "POP_BLOCK", "LOAD_SMALL_INT", "RERAISE",
})


def _plain(tree, source, path, config) -> None:  # type: ignore[no-untyped-def]
    """``rewrite_asserts`` for a run whose tests are not rewritten: the tree as it is."""


def _filled(cell) -> bool:  # type: ignore[no-untyped-def]
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def module_codes(module) -> list:  # type: ignore[no-untyped-def]
    """Every code object of a module's functions and classes (their methods, properties, nested
    classes and the functions and lambdas defined inside them)."""
    import types

    out: list = []
    todo = list(vars(module).values())
    seen: set[int] = set()
    while todo:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, type):
            if getattr(value, "__module__", None) == module.__name__:
                todo.extend(vars(value).values())
        elif isinstance(value, (classmethod, staticmethod)):
            todo.append(value.__func__)
        elif isinstance(value, property):
            todo.extend(f for f in (value.fget, value.fset, value.fdel) if f is not None)
        elif isinstance(value, types.FunctionType):
            todo.append(value.__code__)
        elif isinstance(value, types.CodeType):
            out.append(value)
            todo.extend(c for c in value.co_consts if isinstance(c, types.CodeType))
    return out


def hook_source(hook) -> str:  # type: ignore[no-untyped-def]
    """Where a hook's code comes from, for the record."""
    code = getattr(getattr(hook, "__func__", hook), "__code__", None)
    if code is not None:
        return code.co_filename
    owner = getattr(hook, "__self__", None)
    return str(getattr(sys.modules.get(type(owner if owner is not None else hook).__module__), "__file__", "?"))


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


def archive_of(path: str) -> str:
    """The file ``path`` lies inside, when a file (not a directory) is one of its parents: a module
    zipimport loads from an archive (a zipped egg, ``tests/user_commands/eggs/basic.egg``) names
    its ``__file__`` inside the archive (``basic.egg/commandegg/__init__.py``), which no tree holds.
    Such a module is reported as the archive's file, whose bytes the host compares with the base
    commit's; ``path`` itself when it lies in no file."""
    if os.path.lexists(path):
        return path
    parent = os.path.dirname(path)
    while parent and parent != os.path.dirname(parent):
        if os.path.isfile(parent):
            return parent
        if os.path.isdir(parent):
            return path
        parent = os.path.dirname(parent)
    return path


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
