"""The gate's diagnosis of a row whose gold patch leaves tests failing (``coderl eval swe-gate``):
each failing or skipped test's own words from one more run (``diagnose``, in a real sandbox over a
builtin task), and a row whose every failing FAIL_TO_PASS test fails reaching the network is
``needs_network``, apart from broken rows (``with_reasons``, ``gate_summary``). Default tier: the
sandbox test runs one short pytest session over a builtin task (a few seconds with its environment
built)."""

from __future__ import annotations

import asyncio
import dataclasses

from coderl.cache import default_cache_dir
from coderl.eval.swe_gate import (
    GATE_LIMITS,
    NETWORK,
    diagnose,
    gate_record,
    gate_summary,
    kept_row,
    with_reasons,
)
from coderl.sandbox.session import SessionHost
from coderl.swe.environment import build_env
from coderl.swe.grade_status import GradeStatus
from coderl.swe.grader import GradeResult
from coderl.swe.store import RepoStore
from coderl.swe.task import EnvSpec, RepoTask
from coderl.swe.task_set import build_task_set

TASK = RepoTask(instance_id="r-1", repo="o/r", base_commit="0" * 40, problem_statement="",
                fail_to_pass=("t.py::f", "t.py::g"), pass_to_pass=("t.py::a", "t.py::b"))
DNS = "FAILED (call): requests.exceptions.ConnectionError: [Errno -2] Name or service not known"


def _gold_fails(a: str = "PASSED") -> dict:
    gold = GradeResult("r-1", GradeStatus.UNRESOLVED, None, fail_to_pass={"t.py::f": "FAILED", "t.py::g": "FAILED"},
                       pass_to_pass={"t.py::a": a, "t.py::b": "PASSED"})
    empty = GradeResult("r-1", GradeStatus.UNRESOLVED, None, fail_to_pass={"t.py::f": "FAILED", "t.py::g": "FAILED"},
                        pass_to_pass={"t.py::a": "PASSED", "t.py::b": "PASSED"})
    return gate_record(TASK, [gold], [empty])


def test_a_row_whose_failing_tests_all_need_the_network_is_needs_network_not_broken():
    rec = _gold_fails()
    assert rec["category"] == "gold_not_resolved" and set(rec["f2p_failing"]) == {"t.py::f", "t.py::g"}
    network = with_reasons(rec, {"t.py::f": DNS, "t.py::g": "FAILED (call): OSError: [Errno 101] Network is unreachable"})
    assert network["category"] == "needs_network" and not network["kept"]
    assert "need the network" in network["why"] and "Name or service not known" in network["why"]
    # one failing for another reason: the row stays broken, its message says each test's reason
    broken = with_reasons(rec, {"t.py::f": DNS, "t.py::g": "FAILED (call): AssertionError: assert 1 == 2"})
    assert broken["category"] == "gold_not_resolved" and "AssertionError: assert 1 == 2" in broken["why"]
    # no diagnosis (the run gave nothing): never called network
    assert with_reasons(rec, {})["category"] == "gold_not_resolved"
    summary = gate_summary([network, broken], repeats=1)
    assert summary["needs_network_rows"] == 1 and summary["broken_rows"] == 1


def test_dropped_pass_to_pass_tests_that_need_the_network_are_counted_on_a_kept_row():
    gold = GradeResult("r-1", GradeStatus.UNRESOLVED, None, fail_to_pass={"t.py::f": "PASSED", "t.py::g": "PASSED"},
                       pass_to_pass={"t.py::a": "FAILED", "t.py::b": "SKIPPED"})
    empty = GradeResult("r-1", GradeStatus.UNRESOLVED, None, fail_to_pass={"t.py::f": "FAILED", "t.py::g": "FAILED"},
                        pass_to_pass={"t.py::a": "FAILED", "t.py::b": "SKIPPED"})
    rec = with_reasons(gate_record(TASK, [gold], [empty]), {"t.py::a": DNS, "t.py::b": "SKIPPED: could not import 'pint'"})
    assert rec["kept"] and rec["p2p_network"] == ["t.py::a"] and "1 of them need the network" in rec["why"]
    assert rec["failure_reasons"]["t.py::b"] == "SKIPPED: could not import 'pint'"
    assert not NETWORK.search("ConnectionRefusedError: [Errno 111] Connection refused")  # a local server's


def test_diagnose_gives_each_failing_test_its_own_words_in_the_sandbox(tmp_path):
    """Gold applied, then a test patch adding a test that resolves a host name, one that fails an
    assertion and one that skips; only the named tests run (the file's passing test is deselected)."""
    task = build_task_set(tmp_path)[0]
    test_patch = ("diff --git a/test_offline.py b/test_offline.py\nnew file mode 100644\n--- /dev/null\n"
                  "+++ b/test_offline.py\n@@ -0,0 +1,18 @@\n+import os, socket, urllib.request\n+import pytest\n+\n"
                  "+def test_dns():\n+    socket.getaddrinfo('coderl-gate.example', 80)\n+\n"
                  "+def test_wrong():\n+    assert 1 == 2\n+\n+def test_skip():\n+    pytest.skip('needs pint')\n+\n"
                  "+def test_served():\n+    urllib.request.urlopen(os.environ['SERVICE_URL'], timeout=60)\n"
                  "+    assert 'reached the service' == ''\n+\n"
                  "+def test_ok():\n+    assert True\n")
    # the environment's test service runs in the diagnosis as in the grader's runs
    service = {"name": "files", "argv": ["python", "-I", "-m", "http.server", "--bind", "127.0.0.1", "--directory",
                                         "/tmp", "18766"], "port": 18766, "env": {"SERVICE_URL": "http://127.0.0.1:18766/"}}
    task = dataclasses.replace(task, test_patch=test_patch,
                               env=EnvSpec.from_value({**task.env.to_dict(), "services": [service]}),
                               fail_to_pass=("test_offline.py::test_dns", "test_offline.py::test_wrong",
                                             "test_offline.py::test_served"),
                               pass_to_pass=("test_offline.py::test_skip", "test_offline.py::test_ok"))
    wanted = ["test_offline.py::test_dns", "test_offline.py::test_wrong", "test_offline.py::test_skip",
              "test_offline.py::test_served"]

    async def main():
        store = RepoStore(tmp_path / "repos", tmp_path / "cache")
        snapshot = store.snapshot(task.repo, task.base_commit)
        env = build_env(task.env, default_cache_dir())
        async with SessionHost() as host:
            return await diagnose(host, snapshot, env, task, wanted)

    reasons = asyncio.run(main())
    assert set(reasons) == set(wanted), reasons
    assert NETWORK.search(reasons["test_offline.py::test_dns"]), reasons
    assert reasons["test_offline.py::test_wrong"].startswith("FAILED (call): assert") or "AssertionError" in reasons[
        "test_offline.py::test_wrong"], reasons
    assert reasons["test_offline.py::test_skip"] == "SKIPPED: needs pint"
    assert "reached the service" in reasons["test_offline.py::test_served"], reasons


def test_a_run_cut_short_is_no_drift_of_the_tests_it_did_not_reach():
    """seaborn-3407's gold run hit the grader's 600 s limit on a loaded machine: its last 18 tests
    were missing and had been dropped as drift, the row kept. A cut-short run says so instead, and
    the gate's runs have SWE-bench's own limit."""
    gold = GradeResult("r-1", GradeStatus.UNRESOLVED, None, fail_to_pass={"t.py::f": "PASSED", "t.py::g": "PASSED"},
                       pass_to_pass={"t.py::a": "PASSED", "t.py::b": "missing"}, message="tests timed out", wall_s=1800.4)
    empty = GradeResult("r-1", GradeStatus.UNRESOLVED, None, fail_to_pass={"t.py::f": "FAILED", "t.py::g": "FAILED"},
                        pass_to_pass={"t.py::a": "PASSED", "t.py::b": "PASSED"})
    rec = gate_record(TASK, [gold], [empty])
    assert rec["category"] == "gold_cut_short" and not rec["kept"] and "tests timed out" in rec["why"]
    empty_oom = dataclasses.replace(empty, message="out of memory")
    assert gate_record(TASK, [dataclasses.replace(gold, message="", pass_to_pass={"t.py::a": "PASSED", "t.py::b": "PASSED"})],
                       [empty_oom])["category"] == "empty_cut_short"
    assert GATE_LIMITS.exec_s >= 1800 and GATE_LIMITS.episode_s > GATE_LIMITS.exec_s


def test_a_row_keeps_its_other_fail_to_pass_tests_when_some_need_the_network():
    """Only FAIL_TO_PASS tests diagnosed as needing the network are dropped, and only while the
    rest still tell gold from empty (pass every gold run, not every empty run)."""
    def record(empty_g: str) -> dict:
        gold = GradeResult("r-1", GradeStatus.UNRESOLVED, None, fail_to_pass={"t.py::f": "FAILED", "t.py::g": "PASSED"},
                           pass_to_pass={"t.py::a": "PASSED", "t.py::b": "PASSED"})
        empty = GradeResult("r-1", GradeStatus.UNRESOLVED, None, fail_to_pass={"t.py::f": "FAILED", "t.py::g": empty_g},
                            pass_to_pass={"t.py::a": "PASSED", "t.py::b": "PASSED"})
        return gate_record(TASK, [gold], [empty])

    kept = with_reasons(record("FAILED"), {"t.py::f": DNS})
    assert kept["kept"] and kept["category"] == "kept" and kept["f2p_network"] == ["t.py::f"]
    row = kept_row(TASK.to_row(), kept)
    assert row["FAIL_TO_PASS"] == ["t.py::g"] and row["gate"]["f2p_network"] == ["t.py::f"]
    assert gate_summary([kept], repeats=1)["f2p_network"] == 1
    # the rest passes with the empty patch too: nothing tells the fix apart, the row is not kept
    moot = with_reasons(record("PASSED"), {"t.py::f": DNS})
    assert moot["category"] == "needs_network" and not moot["kept"] and "pass with the empty patch too" in moot["why"]
    # the failing test fails for another reason: broken, never dropped
    broken = with_reasons(record("FAILED"), {"t.py::f": "FAILED (call): AssertionError: assert 1 == 2"})
    assert broken["category"] == "gold_not_resolved" and not broken["kept"]
