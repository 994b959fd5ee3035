"""D's ``unittest`` blocks run (SandboxFusion's D_ut, ScaleBox's MultiPL-E D asserts): SandboxFusion's
own test_D_ut_assertion_error found a failing block reported Success, and a wrong MultiPL-E D
solution was accepted on ScaleBox's assert route, because the blocks were never compiled in."""

from __future__ import annotations

import httpx

from tests.helpers.assert_route import accepted

MULTIPLE_TESTS = "\n\nunittest\n{\n    alias candidate = add;\n    assert(candidate(2L, 3L) == 5L);\n}\nvoid main(){}"


def _accepted(url: str, body: str) -> bool:
    return accepted(url, "D_ut", f"```d\nlong add(long a, long b) {{\n    return {body};\n}}\n```", MULTIPLE_TESTS, ["\n}"])


def test_a_wrong_multiple_d_solution_is_not_accepted(service_url):
    assert _accepted(service_url, "a + b") is True
    assert _accepted(service_url, "a - b") is False


def test_run_code_d_ut_fails_on_a_failing_unittest_and_main_runs_after_passing_ones(service_url):
    failing = {"language": "D_ut", "code": "unittest\n{\n    assert(0 == 1);\n}\nvoid main(){}\n"}
    r = httpx.post(service_url + "/run_code", json=failing, timeout=120).json()
    assert r["status"] == "Failed" and r["run_result"]["return_code"] == 1, r
    passing = {"language": "d", "stdin": "4\n", "code": "import std.stdio, std.conv, std.string;\n"
               "unittest { assert(1 + 1 == 2); }\n"
               "void main(string[] args){ writeln(readln.strip.to!int * 2, \" \", args.length); }\n"}
    r = httpx.post(service_url + "/run_code", json=passing, timeout=120).json()
    assert r["status"] == "Success" and r["run_result"]["stdout"] == "8 1\n", r  # the runtime option is not an arg
