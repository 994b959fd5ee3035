"""A repository whose own pytest configuration makes warnings errors is graded under it, as
SWE-bench's harness runs it (``pytest -rA``, nothing added to the warning filters).

matplotlib-24970's FAIL_TO_PASS test fails unfixed only because matplotlib's conftest adds
``filterwarnings = error`` (NumPy's DeprecationWarning is then the failure); the task's default
command used to carry ``-W ignore::DeprecationWarning``, a command-line filter that pytest applies
after the configuration's, so the test passed with the empty patch (the gate's ``empty_resolves``)
and an unfixed patch was graded resolved. Here: ``dep.index`` warns (the bug); the fix stops it.
The error filter comes from ``pytest.ini`` (flask, astropy, pytest's own suite) for one test and
from a conftest's ``pytest_configure`` (matplotlib) for the other; a diff that only drops the
ini's filter is dropped with the ini (the base commit's file is the one read).
"""

from __future__ import annotations

import dataclasses

import pytest

from coderl.swe.task import DEFAULT_TEST_CMD, RepoTask
from tests.swe.test_grader_redteam import ENV, grade_all, make_repo

INI = "[pytest]\nfilterwarnings =\n    error\n"
BASE = {
    "pytest.ini": INI,
    "dep/__init__.py": ("import warnings\n\n\ndef index(x):\n"
                        "    warnings.warn('index() of a float is deprecated', DeprecationWarning)\n"
                        "    return int(x)\n"),
    "tests/test_ini.py": "import dep\n\n\ndef test_index():\n    assert dep.index(2.0) == 2\n",
    "other/conftest.py": "def pytest_configure(config):\n    config.addinivalue_line('filterwarnings', 'error')\n",
    "other/test_conftest.py": "import dep\n\n\ndef test_index_too():\n    assert dep.index(3.0) == 3\n",
}
FIX = {"dep/__init__.py": "def index(x):\n    return int(x)\n"}
INI_TEST, CONFTEST_TEST = "tests/test_ini.py::test_index", "other/test_conftest.py::test_index_too"


@pytest.mark.timeout(600)
def test_a_configuration_that_makes_warnings_errors_fails_the_unfixed_tests(tmp_path):
    """Default tier: one environment (the red team's, cached), five gradings in one host."""
    sha, gold = make_repo(tmp_path / "repos", "warnerr", BASE, FIX)
    # the default command, as a SWE-bench row (no test_cmd) gets it; the ini is at the root, the
    # conftest's directory below it: both pytest's own rules, nothing the grader adds
    row = {"instance_id": "redteam__warnerr-1", "repo": "redteam/warnerr", "base_commit": sha,
           "FAIL_TO_PASS": [INI_TEST], "PASS_TO_PASS": [], "patch": gold}
    ini_task = dataclasses.replace(RepoTask.from_row(row), env=ENV)
    conftest_task = dataclasses.replace(ini_task, instance_id="redteam__warnerr-2", fail_to_pass=(CONFTEST_TEST,))
    ini_off = ("diff --git a/pytest.ini b/pytest.ini\n--- a/pytest.ini\n+++ b/pytest.ini\n@@ -1,3 +1 @@\n [pytest]\n"
               "-filterwarnings =\n-    error\n")
    results = grade_all(tmp_path, [(ini_task, ""), (ini_task, gold), (conftest_task, ""), (conftest_task, gold),
                                   (ini_task, ini_off)])
    empty, fixed, c_empty, c_fixed, dropped = results
    for r, test in ((empty, INI_TEST), (c_empty, CONFTEST_TEST), (dropped, INI_TEST)):
        assert (r.status, r.fail_to_pass) == ("unresolved", {test: "FAILED"}), (r, r.log_tail[-1500:])
    assert "DeprecationWarning" in empty.log_tail and "pytest.ini" in dropped.tests_touched
    for r in (fixed, c_fixed):
        assert (r.status, r.reward, r.findings) == ("resolved", 1.0, []), (r, r.log_tail[-1500:])
    assert ini_task.test_cmd == DEFAULT_TEST_CMD and "-W" not in DEFAULT_TEST_CMD.split()


def test_rows_built_with_the_old_default_command_read_as_the_new_one():
    """Rows ``coderl data swe-bench`` wrote before carry the old default (``to_row`` writes it out):
    read as today's default; any other command is the row's own."""
    row = {"instance_id": "a__b-1", "repo": "a/b", "base_commit": "0" * 40, "FAIL_TO_PASS": ["t.py::t"]}
    old = "python -m pytest -rA -p no:cacheprovider -W ignore::DeprecationWarning"
    assert RepoTask.from_row({**row, "test_cmd": old}).test_cmd == DEFAULT_TEST_CMD
    own = "python -m pytest -rA -W ignore::DeprecationWarning"
    assert RepoTask.from_row({**row, "test_cmd": own}).test_cmd == own
