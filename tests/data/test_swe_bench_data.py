"""`coderl data swe-bench` on repositories made here: a full-history mirror (the row's upstream base
commit kept, the fix commit after it never in the snapshot) and a bundle whose tag names the
instance (an orphan commit, as ../shared/data/swe-bench-lite/ has them); sympy's bare test names
mapped to ``file::name`` through the test patch's files; every row it cannot serve skipped with
its reason. No environment is built here (no --build-envs): tests/swe/test_swe_bench_rows.py
builds real ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coderl.errors import EnvBuildError
from coderl.swe.interpreters import find_python
from coderl.swe.store import git
from coderl.swe.task import EnvSpec

TEST_FILE = "sympy/core/tests/test_things.py"
BASE = {"sympy/__init__.py": "", "sympy/core/__init__.py": "", "sympy/core/things.py": "def double(x):\n    return x + x + 1\n",
        TEST_FILE: "from sympy.core.things import double\n\n\ndef test_zero():\n    assert double(0) in (0, 1)\n"}
TEST_PATCH = "\n".join([f"diff --git a/{TEST_FILE} b/{TEST_FILE}", f"--- a/{TEST_FILE}", f"+++ b/{TEST_FILE}",
                        "@@ -3,3 +3,7 @@ from sympy.core.things import double", " ", " def test_zero():",
                        "     assert double(0) in (0, 1)", "+", "+", "+def test_double():", "+    assert double(2) == 4", ""])
_DATE = {"GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}


def make_mirror(root: Path) -> tuple[str, str, str]:
    """A sympy-shaped repository with history: base commit, then the fix. (base sha, fix sha, gold diff)."""
    work = root / "work"
    for path, text in BASE.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git("init", "-q", "-b", "main", str(work))
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "base", cwd=work, env=_DATE)
    base = git("rev-parse", "HEAD", cwd=work).strip()
    (work / "sympy/core/things.py").write_text("def double(x):\n    return x + x\n")
    git("commit", "-q", "-am", "fix", cwd=work, env=_DATE)
    fix = git("rev-parse", "HEAD", cwd=work).strip()
    gold = git("diff", base, fix, cwd=work)
    git("clone", "-q", "--mirror", str(work), str(root / "repos" / "sympy__sympy"))
    return base, fix, gold


def row(iid: str, base: str, gold: str, **kw: object) -> dict:
    return {"instance_id": iid, "repo": "sympy/sympy", "base_commit": base, "patch": gold, "test_patch": TEST_PATCH,
            "problem_statement": "double is off by one", "version": "1.12", "created_at": "2023-01-01T00:00:00Z",
            "FAIL_TO_PASS": json.dumps(["test_double"]), "PASS_TO_PASS": json.dumps(["test_zero"]), **kw}


def swe_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coderl.cli", "data", "swe-bench", *args], capture_output=True,
                          text=True, env={"CODERL_NO_PROGRESS": "1", "PATH": "/usr/bin:/bin"})


def test_rows_from_a_mirror_with_history(tmp_path):
    base, fix, gold = make_mirror(tmp_path)
    rows = [row("sympy__sympy-1", base, gold),
            row("sympy__sympy-2", base, gold, FAIL_TO_PASS=["test_double"], PASS_TO_PASS=[]),  # lists as lists
            row("django__django-1", base, gold, repo="django/django", FAIL_TO_PASS='["test_x (app.tests.T)"]'),
            row("sympy__sympy-3", base, gold, version="0.1"),
            row("sympy__sympy-4", base, gold, FAIL_TO_PASS='["test_nowhere"]'),
            row("sympy__sympy-5", "1" * 40, gold),
            row("astropy__astropy-1", base, gold, repo="astropy/astropy"),
            row("sympy__sympy-6", base, gold, FAIL_TO_PASS='["test_x (app.tests.T)"]')]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    proc = swe_bench("--rows", str(source), "--repos", str(tmp_path / "repos"), "--out", str(out),
                     "--cache", str(tmp_path / "cache"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["served"] == 2 and report["instances"] == ["sympy__sympy-1", "sympy__sympy-2"]
    skipped = report["skipped"]
    assert set(skipped) == {"django__django-1", "sympy__sympy-3", "sympy__sympy-4", "sympy__sympy-5", "astropy__astropy-1",
                            "sympy__sympy-6"}
    assert "django/django is not in --repos" in skipped["django__django-1"]  # Django's unittest names are served
    assert "unittest runner" in skipped["sympy__sympy-6"]  # another repository's are not
    assert "no environment for sympy/sympy version '0.1'" in skipped["sympy__sympy-3"]
    assert "'test_nowhere' is a bare name defined in none" in skipped["sympy__sympy-4"]
    assert "nor a tag sympy__sympy-5" in skipped["sympy__sympy-5"]
    assert "astropy/astropy is not in --repos" in skipped["astropy__astropy-1"]
    assert all(f"skipped {i}: " in proc.stdout for i in skipped)  # each said on the command line too
    task = json.loads((out / "tasks.jsonl").read_text().splitlines()[0])
    assert task["base_commit"] == task["upstream_base_commit"] == base  # the mirror has it
    assert task["FAIL_TO_PASS"] == [f"{TEST_FILE}::test_double"] and task["PASS_TO_PASS"] == [f"{TEST_FILE}::test_zero"]
    env = task["environment_setup"]
    assert env["python"] == "3.9" and env["source"] == f"sympy/sympy@{base}" and env["install"] == "."
    snapshot = tmp_path / "cache" / "snapshots" / f"sympy__sympy@{base[:16]}"
    log = git("log", "--all", "--format=%H", cwd=snapshot).split()
    assert log == [base] and fix not in log  # the fix commit after the base never reaches the snapshot


def test_rows_from_a_bundle_tag_per_instance(tmp_path):
    base, _, gold = make_mirror(tmp_path)
    orphan = tmp_path / "orphan"
    git("clone", "-q", str(tmp_path / "repos" / "sympy__sympy"), str(orphan))
    git("checkout", "-q", "--orphan", "x", base, cwd=orphan)
    git("commit", "-q", "-m", f"base tree of {base}", cwd=orphan, env=_DATE)
    git("tag", "sympy__sympy-1", cwd=orphan)
    bundles = tmp_path / "bundles"
    bundles.mkdir()
    git("bundle", "create", str(bundles / "sympy__sympy.bundle"), "refs/tags/sympy__sympy-1", cwd=orphan)
    source = tmp_path / "rows.json"
    source.write_text(json.dumps([row("sympy__sympy-1", base, gold)]))  # a JSON list, as rows.json is
    out = tmp_path / "out"
    proc = swe_bench("--rows", str(source), "--repos", str(bundles), "--out", str(out), "--cache", str(tmp_path / "cache"),
                     "--instances", "sympy__sympy-1")
    assert proc.returncode == 0, proc.stderr
    task = json.loads((out / "tasks.jsonl").read_text())
    tagged = git("rev-parse", "sympy__sympy-1^{commit}", cwd=orphan).strip()
    assert task["base_commit"] == tagged != base and task["upstream_base_commit"] == base
    assert task["FAIL_TO_PASS"] == [f"{TEST_FILE}::test_double"]


def test_bad_input_is_a_one_line_error(tmp_path):
    base, _, gold = make_mirror(tmp_path)
    source = tmp_path / "rows.jsonl"
    source.write_text(json.dumps(row("sympy__sympy-1", base, gold)) + "\n")
    for args, words in ((["--instances", "nope-1"], "--instances: not in"),
                        (["--repos", str(tmp_path / "none")], "no such directory")):
        argv = ["--rows", str(source), "--repos", str(tmp_path / "repos"), "--out", str(tmp_path / "o"), *args]
        proc = swe_bench(*argv)
        assert proc.returncode != 0 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_python_not_on_the_machine_is_named_with_how_to_get_it():
    with pytest.raises(EnvBuildError, match=r"no Python 3\.99 on this machine: install it \(`uv python install 3\.99`"):
        find_python("3.99")
    with pytest.raises(EnvBuildError, match="not of the form 3.Y"):
        find_python("three")


def test_env_spec_keys():
    plain = EnvSpec.from_value({"requirements": ["pytest"], "pythonpath": ["src"]})
    assert plain.to_dict() == {"requirements": ["pytest"], "pythonpath": ["src"]}  # plain keys unchanged
    real = EnvSpec.from_value({"python": "3.9", "resolved_at": "2020-01-01T00:00:00Z", "install": ".[dev]",
                               "requirement_files": ["req.txt"], "pre_install": ["true"], "source": "a/b@" + "0" * 40,
                               "build_env": {"SETUPTOOLS_SCM_PRETEND_VERSION": "1.0"}})
    assert EnvSpec.from_value(real.to_dict()) == real
    with pytest.raises(Exception, match="need python"):
        EnvSpec.from_value({"install": "."})


def test_a_bare_name_two_test_files_define_is_both_tests(tmp_path):
    """sympy__sympy-12236's PASS_TO_PASS ``test_noncommutative`` is defined in two of its test patch's
    files; SWE-bench runs both and its log has the name twice: the row holds both tests (it was
    skipped)."""
    base, _, gold = make_mirror(tmp_path)
    other = "sympy/core/tests/test_other.py"
    second = "\n".join([f"diff --git a/{other} b/{other}", "new file mode 100644", "--- /dev/null", f"+++ b/{other}",
                        "@@ -0,0 +1,2 @@", "+def test_zero():", "+    assert True", ""])
    source = tmp_path / "rows.jsonl"
    source.write_text(json.dumps(row("sympy__sympy-7", base, gold, test_patch=TEST_PATCH + second)) + "\n")
    out = tmp_path / "out"
    proc = swe_bench("--rows", str(source), "--repos", str(tmp_path / "repos"), "--out", str(out),
                     "--cache", str(tmp_path / "cache"))
    assert proc.returncode == 0, proc.stderr
    task = json.loads((out / "tasks.jsonl").read_text().splitlines()[0])
    assert task["FAIL_TO_PASS"] == [f"{TEST_FILE}::test_double"]
    assert task["PASS_TO_PASS"] == [f"{TEST_FILE}::test_zero", f"{other}::test_zero"]
