"""The import structure of ``src/coderl``, read statically: every import statement (at module level
and inside functions: a deferred import is still a dependency, only paid later) of every module.

Rules (issue 25 item 7):
- no cycle between modules, and none between packages (a package's modules taken together);
- no import from a lower layer up (``LAYERS``, declared once here, low to high);
- ``verl`` is imported only under ``coderl/verl/``;
- an HTTP client library only where the peer is not the coderl service: the service is talked to
  by ``coderl.client`` alone.

Static, not by importing: importing runs the modules (and their optional dependencies: verl, torch,
ray), and an import inside a function that no test calls would go unseen. The repository tasks'
data (``swe/tasks/``: the tiny repositories graded in the sandbox) is data, not coderl's code.
The checks run on the real tree and, to show that each can fail, on a small broken tree.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
NOT_CODE = ("coderl/swe/tasks",)

# Low to high: a module may import from its own layer (without a cycle) and from the layers below.
# A unit is a package under coderl (``sandbox``) or a top-level module (``errors``); ``coderl`` is
# the package's own __init__ (its version).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("coderl", "errors", "cache", "argtypes", "api_token"),  # leaves everyone may use
    ("sandbox",),  # isolation and execution
    ("judge",),  # verdicts over the sandbox's runs
    ("client", "local", "interpreter"),  # the service over HTTP, its in-process twin, the tool's verl-free half
    ("swe", "gateway"),  # repository tasks and their grader; the agent interception gateway
    ("records", "data"),  # per-sample records (of gateway trajectories); dataset builders (of judge specs, swe rows)
    ("server", "eval", "view", "plots"),  # the service, evaluation, the records' viewer, figures
    ("verl",),  # everything that imports verl
    ("cli", "demo"),  # the command that dispatches to every package's cli, the end-to-end demo
)

HTTP_CLIENT_LIBRARIES = ("httpx", "requests", "aiohttp", "urllib3", "urllib.request", "http.client")
# Modules allowed an HTTP client library, and the peer they talk to.
HTTP_PEERS = {
    "coderl.client": "the coderl service",
    "coderl.gateway.backends": "the rollout servers (vLLM, SGLang) the gateway generates on",
    "coderl.eval.backends": "the OpenAI-compatible server of the model under evaluation",
    "coderl.server.gateway_relay": "the agent gateway, for a remote session's model calls",
    "coderl.server.session_registry": "the agent gateway: the one connection pool the sessions' relays share",
}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (or name, outside coderl), absolute
    line: int


def module_name(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_imports(src: Path, package: str = "coderl") -> tuple[set[str], list[Import]]:
    """The package's modules and every import in them. ``from X import name`` names the module
    ``X.name`` where that is a module of the tree, else ``X``; relative imports are made absolute."""
    files = [p for p in sorted((src / package).rglob("*.py"))
             if not any(p.relative_to(src).as_posix().startswith(d + "/") for d in NOT_CODE)]
    modules = {module_name(src, p): p for p in files}
    imports = []
    for name, path in modules.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imports += [Import(name, alias.name, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module or ""
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    imports.append(Import(name, sub if sub in modules else base, node.lineno))
    return set(modules), imports


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def internal(modules: set[str], imports: list[Import]) -> list[Import]:
    return [i for i in imports if i.target in modules and i.target != i.source]


def module_cycles(modules: set[str], imports: list[Import]) -> list[list[str]]:
    graph: dict[str, set[str]] = {}
    for i in internal(modules, imports):
        graph.setdefault(i.source, set()).add(i.target)
    return cycles(graph)


def package_cycles(modules: set[str], imports: list[Import]) -> list[list[str]]:
    graph: dict[str, set[str]] = {}
    for i in internal(modules, imports):
        if unit(i.source) != unit(i.target):
            graph.setdefault(unit(i.source), set()).add(unit(i.target))
    return cycles(graph)


def upward_imports(modules: set[str], imports: list[Import], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Each import from a lower layer up, and each unit no layer declares, as a line that names it."""
    layer_of = {name: n for n, layer in enumerate(layers) for name in layer}
    undeclared = sorted({unit(m) for m in modules} - set(layer_of))
    problems = [f"{name}: in no layer (declare it in LAYERS)" for name in undeclared]
    for i in internal(modules, imports):
        source, target = layer_of.get(unit(i.source)), layer_of.get(unit(i.target))
        if source is not None and target is not None and target > source:
            problems.append(f"{i.source}:{i.line} imports {i.target} (layer {unit(i.source)!r} < {unit(i.target)!r})")
    return problems


def stray_imports(imports: list[Import], libraries: tuple[str, ...], allowed: set[str] | tuple[str, ...]) -> list[str]:
    """Imports of ``libraries`` (or their submodules) from a module that is not ``allowed`` (a
    module, or a package and everything under it)."""
    return [f"{i.source}:{i.line} imports {i.target}" for i in imports
            if any(within(i.target, lib) for lib in libraries)
            and not any(within(i.source, ok) for ok in allowed)]


def check(src: Path, package: str = "coderl", layers: tuple[tuple[str, ...], ...] = LAYERS) -> dict[str, list]:
    modules, imports = read_imports(src, package)
    return {
        "module cycles": module_cycles(modules, imports),
        "package cycles": package_cycles(modules, imports),
        "upward imports": upward_imports(modules, imports, layers),
        "verl outside coderl.verl": stray_imports(imports, ("verl",), (f"{package}.verl",)),
        "HTTP clients outside their peers": stray_imports(imports, HTTP_CLIENT_LIBRARIES, tuple(HTTP_PEERS)),
    }


@pytest.mark.parametrize("rule", ["module cycles", "package cycles", "upward imports", "verl outside coderl.verl",
                                  "HTTP clients outside their peers"])
def test_the_tree_keeps_the_rule(rule: str) -> None:
    assert check(SRC)[rule] == [], f"{rule}: " + "; ".join(map(str, check(SRC)[rule]))


def private_imports(files: list[Path]) -> list[str]:
    """Each ``from coderl.x import _name`` (a module's private name) in ``files``: a helper another
    module, a test or a benchmark needs is part of its module's interface, so it is public."""
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "coderl":
                found += [f"{path}:{node.lineno} imports {node.module}.{alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_private_name_is_imported_from_another_module(tmp_path: Path) -> None:
    root = SRC.parent
    files = [p for d in ("src", "tests", "benchmarks", "scripts") for p in sorted((root / d).rglob("*.py"))
             if not any(part in ("tasks", "__pycache__") for part in p.relative_to(root / d).parts[:3])]
    assert private_imports(files) == []
    broken = _write(tmp_path, {"t.py": "from coderl.judge.compare import _tokens, __doc__, tokens\n"})
    assert private_imports([broken / "t.py"]) == [f"{broken / 't.py'}:1 imports coderl.judge.compare._tokens"]


def test_the_reader_sees_every_kind_of_import() -> None:
    """Relative, function-level and ``from package import module`` imports each name their module."""
    modules, imports = read_imports(SRC)
    edges = {(i.source, i.target) for i in imports}
    assert ("coderl.sandbox.slot", "coderl.sandbox.isolation") in edges  # from coderl.sandbox import isolation
    assert ("coderl.server.cli", "coderl.client") in edges  # inside a function (the health command's)
    assert ("coderl.judge.judge", "coderl.sandbox") in edges  # names of a package's __init__
    assert "coderl.swe.pytest_inside.launcher" in modules and not any("tasks" in m.split(".") for m in modules)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_each_rule_fails_on_a_broken_tree(tmp_path: Path) -> None:
    """A tree that breaks every rule once: each check names the break, and only it."""
    src = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/errors.py": "",
        "pkg/low/__init__.py": "from pkg.low import a\n",
        "pkg/low/a.py": "from . import b\n",
        "pkg/low/b.py": "def f():\n    from pkg.low.a import x\n    from pkg.high import c\n",  # cycle a<->b; upward
        "pkg/high/__init__.py": "",
        "pkg/high/c.py": "import httpx\nfrom pkg import errors\n",
        "pkg/side.py": "from verl import DataProto\nimport pkg.verl\n",
        "pkg/verl/__init__.py": "import verl.protocol\nimport pkg.side\n",  # side <-> verl: a package cycle
    })
    found = check(src, "pkg", layers=(("pkg", "errors"), ("low",), ("high", "side", "verl")))
    assert found["module cycles"] == [["pkg.low.a", "pkg.low.b"], ["pkg.side", "pkg.verl"]]
    assert found["package cycles"] == [["side", "verl"]]
    assert found["upward imports"] == ["pkg.low.b:3 imports pkg.high.c (layer 'low' < 'high')"]
    assert found["verl outside coderl.verl"] == ["pkg.side:1 imports verl"]
    assert found["HTTP clients outside their peers"] == ["pkg.high.c:1 imports httpx"]
    assert check(src, "pkg", layers=(("pkg", "errors"), ("low", "high")))["upward imports"] == \
        ["side: in no layer (declare it in LAYERS)", "verl: in no layer (declare it in LAYERS)"]
