"""Training tasks from real repositories (issue 48), the parts that run no test suite: SWE-smith's two
branch layouts read from the real mirrors (../shared/data/swe-smith), the starting tree and the
patches built from them, SWE-smith's environments as specs, statements that never quote the fix,
the AST bug operators, the SWE-bench overlap report and the CLI's errors. The suites run in
tests/data/test_swe_smith_tasks.py (slow: environments, sandbox runs, the gate)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from coderl.data.bug_tasks import RepoBuilder
from coderl.data.decontam import overlap_report
from coderl.data.mutations import mutations
from coderl.data.statements import failing_tests_statement, reveals_fix
from coderl.data.swe_smith import (
    build_swe_smith,
    candidate,
    find_mirrors,
    mirror_git,
    read_specs,
    sample,
    smith_spec,
    task_branches,
)
from coderl.data.synth import build_synth
from coderl.errors import BadRequest
from coderl.swe.store import git
from coderl.swe.task import EnvSpec
from tests.helpers.shared_data import SHARED, needs_shared_data

SMITH = SHARED / "swe-smith"
APISPEC, H11 = "marshmallow-code__apispec.8b421526", "python-hyper__h11.bed0dd4a"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coderl.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "CODERL_NO_PROGRESS": "1"})


@needs_shared_data
def test_both_layouts_make_an_orphan_start_whose_test_patch_restores_the_hidden_tests(tmp_path):
    mirrors = find_mirrors(SMITH)
    assert {APISPEC, H11} <= set(mirrors)
    builder = RepoBuilder("owner/name", tmp_path / "repos", tmp_path / "cache", EnvSpec(), "python -m pytest",
                          host=None)  # type: ignore[arg-type]  # no suite runs here
    for mirror, layout in ((APISPEC, "3-commit"), (H11, "2-commit")):
        source = mirror_git(mirrors[mirror], tmp_path / "cache")
        branch = task_branches(source, mirror)[0]
        cand = candidate(source, branch)
        assert cand.meta["layout"] == layout and cand.instance_id == branch
        clean = builder.import_commit(source, cand.clean_commit)
        clean_tree = git("rev-parse", f"{clean}^{{tree}}", cwd=builder.work).strip()
        bug_tree = builder._tree(clean_tree, cand.bug_diff, ())
        hidden = cand.hidden or ("h11/tests/test_util.py",)
        start = builder._tree(bug_tree, "", hidden)
        if layout == "3-commit":  # the branch's own head is the starting tree SWE-smith gives agents
            assert start == git("rev-parse", f"{cand.meta['mirror_branch_head']}^{{tree}}", cwd=source).strip()
            assert all(p.startswith("tests/") for p in hidden)
        added = git("diff", "--name-status", start, bug_tree, cwd=builder.work).splitlines()
        assert sorted(line.split("\t")[1] for line in added) == sorted(hidden)
        assert all(line.startswith("A\t") for line in added)
        gold_files = git("diff", "--name-only", bug_tree, clean_tree, cwd=builder.work).split()
        assert gold_files and not set(gold_files) & set(hidden)
    assert git("rev-list", "--count", "--all", cwd=builder.work).strip()  # the clean commits are kept by refs


@needs_shared_data
def test_swe_smiths_environments_read_as_specs():
    entries = read_specs(SMITH / "repos.json")
    assert len(entries) == 6
    spec, test_cmd = smith_spec(entries[APISPEC])
    assert spec.python == "3.10" and spec.install == ".[dev]" and "pytest==8.3.4" in spec.requirements
    assert test_cmd == "python -m pytest --disable-warnings --color=no --tb=no --verbose"
    assert all(smith_spec(e)[0].install == "." for m, e in entries.items() if m != APISPEC)


def test_a_sample_is_the_same_every_time_and_depends_on_the_seed():
    branches = [f"b{i}" for i in range(50)]
    assert sample(branches, 5, 0, "m") == sample(branches, 5, 0, "m") != sample(branches, 5, 1, "m")
    assert sample(branches, None, 0, "m") == branches == sample(branches, 80, 0, "m")


GOLD = """diff --git a/src/pkg/core.py b/src/pkg/core.py
--- a/src/pkg/core.py
+++ b/src/pkg/core.py
@@ -10,3 +10,3 @@ def total(items):
     count = 0
-    return sum(items) - count_items(items)
+    return sum(items) + count_items(items)
"""


def test_a_statement_from_failing_tests_never_quotes_the_fix():
    messages = {
        "tests/test_core.py::test_total": "AssertionError: assert 4 == 6\nwhere code is return sum(items) + count_items(items)",
        "tests/test_core.py::test_empty": "src/pkg/core.py:11: TypeError: bad operand",
        "tests/test_core.py::test_other": "AssertionError: assert core.py:11 failed",
    }
    text = failing_tests_statement("pkg/pkg", list(messages), messages, GOLD)
    assert "tests/test_core.py::test_total" in text and "assert 4 == 6" in text  # what the tests show
    assert not reveals_fix(text, GOLD)
    assert "count_items" not in text and "core.py:11" not in text
    assert reveals_fix("x\n    return sum(items) - count_items(items)", GOLD)


def test_bug_operators_edit_only_function_bodies_and_every_one_compiles():
    source = b'''LIMIT = 3 == 3


def pick(items, n):
    """Doc."""
    if not items:
        return None
    out = []  # the result
    for i in range(n + 1):
        if items[i] > LIMIT and i in items:
            out.append(items[i])
    total = max(0, len(out))
    return out
'''
    found = mutations(source)
    ops = {m.op for m in found}
    assert ops >= {"compare_flip", "bool_flip", "not_dropped", "op_swap", "args_swapped", "if_inverted", "off_by_one",
                   "return_changed", "stmt_removed", "ctrl_shuffled"}
    for m in found:
        changed = m.apply(source)
        ast.parse(changed)
        assert changed != source and changed.startswith(b"LIMIT = 3 == 3\n")  # module level untouched
    flips = [m.apply(source) for m in found if m.op == "compare_flip"]
    assert any(b"(items[i] <= LIMIT)" in f for f in flips)
    removed = [m.apply(source) for m in found if m.op == "stmt_removed"]
    assert any(b"out = []" not in r for r in removed)
    assert mutations(b"def broken(:\n") == []


def test_overlap_with_swe_bench_by_instance_repository_and_commit(tmp_path):
    bench = tmp_path / "rows.jsonl"
    bench.write_text(json.dumps({"instance_id": "sympy__sympy-1", "repo": "sympy/sympy",
                                 "base_commit": "abcdef1234" + "0" * 30, "created_at": "2025-01-01T00:00:00Z"}) + "\n")
    rows = [{"instance_id": "sympy__sympy-1", "repo": "sympy/sympy"},
            {"instance_id": "x", "repo": "sympy/sympy", "mirror": "sympy__sympy.abcdef12"},
            {"instance_id": "y", "repo": "python-hyper/h11", "mirror": "python-hyper__h11.bed0dd4a"}]
    found = overlap_report(rows, str(bench))
    assert any("instance" in o for o in found["sympy__sympy-1"]["overlaps"])
    assert any("same commit abcdef12" in o for o in found["x"]["overlaps"])
    assert found["y"]["overlaps"] == []
    assert overlap_report([{"instance_id": "z", "repo": "django/django"}], None)["z"]["overlaps"]


@needs_shared_data
def test_the_commands_refuse_bad_input_in_one_line(tmp_path):
    missing = cli("data", "swe-smith", "--mirrors", str(tmp_path / "none"), "--out", str(tmp_path / "o"))
    assert missing.returncode != 0 and "no such directory" in missing.stderr and "Traceback" not in missing.stderr
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / f"{H11}.bundle").symlink_to(SMITH / f"{H11}.bundle")
    with pytest.raises(BadRequest, match="--instances: no such branch"):
        build_swe_smith(tmp_path / "m", tmp_path / "o", cache_dir=tmp_path / "c", instances=["nope"], build_envs=True)
    with pytest.raises(BadRequest, match="pass --build-envs"):
        build_swe_smith(tmp_path / "m", tmp_path / "o", cache_dir=tmp_path / "c")
    plain = tmp_path / "plainrepo.bundle"  # neither a --specs entry nor a mirror's name: whose is it?
    plain.symlink_to(SMITH / f"{H11}.bundle")
    with pytest.raises(BadRequest, match="pass --name"):
        build_synth(plain, "main", tmp_path / "o", cache_dir=tmp_path / "c")
    with pytest.raises(BadRequest, match="--commit nope: not a commit"):
        build_synth(tmp_path / "m" / f"{H11}.bundle", "nope", tmp_path / "o", cache_dir=tmp_path / "c")


@pytest.mark.parametrize("name", ["not-a-mirror", "owner__name.zzzzzzzz"])
def test_only_mirror_names_are_mirrors(tmp_path, name):
    (tmp_path / f"{name}.bundle").write_text("")
    assert find_mirrors(tmp_path) == {}
