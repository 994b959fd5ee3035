"""The environment's modules a grading run imports before its go-ahead (``swe.preimports``,
``pytest_inside/preimport.py``; issue 49 item 5): only what the project requires, only what imports
purely, and never in place of a module of the same name the work tree holds.

Built for real: a project (``tiny_backend``, installed editable as SWE-bench's envs are) that
requires local wheels, one of each kind the probe must tell apart, plus pytest; graded on the real
sandbox."""

from __future__ import annotations

import asyncio

from coderl.sandbox.session import SessionHost
from coderl.swe import preimports
from coderl.swe.environment import build_env
from coderl.swe.grader import RepoGrader
from coderl.swe.store import RepoStore
from coderl.swe.task import EnvSpec, RepoTask
from tests.swe.test_pin_overrides import PYTHON, tiny_project
from tests.swe.test_unit_repo_env import make_wheel

# each dependency's module source, and what it requires; the probe keeps the pure ones
DEPS = {
    "dep_pure": ("VALUE = 42\n", ()),
    "dep_env": ("import os\nHOME = os.environ.get('HOME')\n", ()),  # reads a variable at import
    "dep_warn": ("import warnings\nwarnings.warn('old', DeprecationWarning)\n", ()),
    "dep_filter": ("import warnings\nwarnings.filterwarnings('ignore', category=UserWarning)\n", ()),
    "dep_file": ("try:\n    open('dep_file.cfg').close()\nexcept OSError:\n    pass\n", ()),  # the cwd's file
    "dep_thread": ("import threading\nthreading.Thread(target=lambda: None).start()\n", ()),
    "dep_chain": ("import dep_env\n", ("dep_env",)),  # pure itself, but imports an impure one first
    "dep_nested": ("import dep_sub\n", ("dep_sub",)),
    "dep_sub": ("SUB = 1\n", ()),
    "dep_extra": ("EXTRA = 1\n", ()),  # required only under an extra
}
PURE = ("dep_pure", "dep_nested", "dep_sub")
PROJECT = {
    "tinypre/__init__.py": "import dep_pure\n\n\ndef value():\n    return dep_pure.VALUE - 1\n",
    "tests/test_value.py": "import dep_pure\nimport tinypre\n\n\ndef test_value():\n    assert tinypre.value() == 42\n\n\n"
                           "def test_dep():\n    assert dep_pure.VALUE == 42\n",
}
GOLD = """diff --git a/tinypre/__init__.py b/tinypre/__init__.py
--- a/tinypre/__init__.py
+++ b/tinypre/__init__.py
@@ -2,4 +2,4 @@ import dep_pure


 def value():
-    return dep_pure.VALUE - 1
+    return dep_pure.VALUE
"""
# the fix, and a module named like a required distribution's where pytest puts the tests' directory
# at the front of sys.path: plain pytest imports this one, so both tests fail
SHADOW = GOLD + """diff --git a/tests/dep_pure.py b/tests/dep_pure.py
new file mode 100644
--- /dev/null
+++ b/tests/dep_pure.py
@@ -0,0 +1 @@
+VALUE = 0
"""


class Recording(RepoGrader):
    """Records what each grading run it starts was told to import ahead."""

    told: list = []

    async def start_run(self, snapshot, env, command, spec, within_s):  # type: ignore[no-untyped-def]
        self.told = [*self.told, spec.get("preimport")]
        return await super().start_run(snapshot, env, command, spec, within_s)


def test_pure_required_modules_are_imported_ahead_and_never_in_place_of_the_work_trees(tmp_path):
    wheels = {name: make_wheel(tmp_path / "wheels", name, source=source, requires=requires)
              for name, (source, requires) in DEPS.items()}
    requires = [n for n in DEPS if n not in ("dep_sub", "dep_extra")] + ["dep_extra; extra == 'x'"]
    cache, source = tiny_project(tmp_path, "tinypre", requires, PROJECT)
    spec = EnvSpec(python=PYTHON, install=".", source=source,
                   requirements=("pytest", *(f"{name} @ {wheel.as_uri()}" for name, wheel in wheels.items())))
    env = build_env(spec, cache)

    # the probe: what the project requires (not under an extra), transitively, whose import is pure
    assert set(preimports.probe(cache, env)) == set(PURE)
    assert preimports.known(cache, env) is not None

    task = RepoTask(instance_id="acme__tinypre-1", repo="acme/tinypre", base_commit=source.partition("@")[2],
                    problem_statement="", fail_to_pass=("tests/test_value.py::test_value",),
                    pass_to_pass=("tests/test_value.py::test_dep",), gold_patch=GOLD, env=spec)

    async def main():
        async with SessionHost() as host:
            grader = Recording(host, RepoStore(tmp_path / "repos", cache), env_cache=cache)
            gold = await grader.grade(task, GOLD)
            told_gold = list(grader.told)
            shadow = await grader.grade(task, SHADOW)
            told_shadow = grader.told[len(told_gold):]
            empty = await grader.grade(task, "")
            return gold, told_gold, shadow, told_shadow, empty

    gold, told_gold, shadow, told_shadow, empty = asyncio.run(main())
    assert (gold.status, gold.reward) == ("resolved", 1.0), (gold.message, gold.log_tail[-2000:])
    assert told_gold == [list(preimports.known(cache, env))], told_gold
    # the diff wrote tests/dep_pure.py: the run importing dep_pure ahead is given up before its
    # go-ahead, and a run importing nothing ahead grades it, as plain pytest would (the work tree's module)
    assert (shadow.status, shadow.reward) == ("unresolved", 0.0), (shadow.message, shadow.log_tail[-2000:])
    assert shadow.pass_to_pass == {"tests/test_value.py::test_dep": "FAILED"}, shadow.pass_to_pass
    assert told_shadow == [told_gold[0], None], told_shadow
    assert (empty.status, empty.reward) == ("unresolved", 0.0), empty.message


def test_a_module_name_in_any_part_of_a_path_shadows(tmp_path):
    names = ("werkzeug", "jinja2", "six")
    paths = ["src/werkzeug/__init__.py", "tests/jinja2.py", "docs/six.txt", "lib/sixth.py",
             "ext/jinja2x.cpython-311-x86_64-linux-gnu.so"]
    assert preimports.names_in(paths, names) == {"werkzeug", "jinja2"}
    upper = tmp_path / "upper"
    (upper / "a" / "six").mkdir(parents=True)
    assert preimports.shadowed(upper, names) == {"six"}
