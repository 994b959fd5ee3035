"""C#'s Debug.Assert fails a program as on .NET (MultiPL-E's C# tests are Debug.Assert calls in Main):
on Mono it only logged, so a WRONG solution exited 0 and was accepted on ScaleBox's assert route
(found by SandboxFusion's own test_csharp_assertion_error against coderl serve)."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers.assert_route import accepted

TESTS = ("    }\n    public static void Main(string[] args) {\n"
         "    Debug.Assert(Add((2L), (3L)) == (5L));\n    Debug.Assert(Add((0L), (7L)) == (7L));\n    }\n\n}\n")
PROMPT = ("using System;\nusing System.Diagnostics;\nclass Problem {\n"
          "    public static long Add(long a, long b) {\n")


def _accepted(url: str, body: str) -> bool:
    return accepted(url, "csharp", f"```csharp\n{PROMPT}        return {body};\n    }}\n```", TESTS, ["\n    }\n"])


def test_a_wrong_multiple_csharp_solution_is_not_accepted(service_url):
    assert _accepted(service_url, "a + b") is True
    assert _accepted(service_url, "a - b") is False


def test_run_code_debug_assert_fails_and_literals_stay_as_written(service_url):
    code = ('using System;\nusing System.Diagnostics;\nclass P { static void Main() {\n'
            '    Console.WriteLine("Debug.Assert(false)");\n    Debug.Assert(1 == 2, "one is not two");\n'
            '    Console.WriteLine("not reached"); } }\n')
    r = httpx.post(service_url + "/run_code", json={"language": "csharp", "code": code}, timeout=120).json()
    assert r["status"] == "Failed" and r["run_result"]["stdout"] == "Debug.Assert(false)\n", r
    assert "Assertion failed. one is not two" in r["run_result"]["stderr"], r


STRING_TESTS = ("    }\n    public static void Main(string[] args) {\n"
                "    Debug.Assert(Echo((\"abc\")).Equals((\"abc!\")));\n    Debug.Assert(Echo((\"\")).Equals((\"!\")));\n    }\n\n}\n")


def test_a_completion_comment_cannot_hide_the_tests_asserts(service_url):
    """A `// "` in the completion once paired with the tests' first string literal, so the asserts
    between looked like a literal and were not made fatal: the wrong solution was accepted."""
    prompt = "using System;\nusing System.Diagnostics;\nclass Problem {\n    public static string Echo(string s) {\n"
    for body, expected in (('s + "!"', True), ('s; // "', False), ('s; /* " */', False)):
        completion = f"```csharp\n{prompt}        return {body};\n    }}\n```"
        assert accepted(service_url, "csharp", completion, STRING_TESTS, ["\n    }\n"]) is expected, body


@pytest.mark.parametrize("usings, call", [
    ("using static System.Diagnostics.Debug;", "Assert(1 == 2)"),
    ("using static System.Diagnostics.Trace;", "if (true) {} else Assert(true); Assert(1 == 2)"),
    ("using D = System.Diagnostics.Debug;", "D.Assert(1 == 2)"),
    ("using System.Diagnostics;", "Debug . Assert(1 == 2)"),
    ("using System.Diagnostics;", 'var s = @"C:\\"; Debug.Assert(1 == 2); var t = "x"'),
    ("using System.Diagnostics;", 'Debug.Assert(condition: 1 == 2, message: "m")'),
    ("using System.Diagnostics;", 'Debug.Assert(1 == 2, "m", "n={0}", 5)'),
])
def test_every_form_of_a_failing_assert_ends_the_program(service_url, usings, call):
    code = f"{usings}\nclass P {{ static void Main() {{\n    {call};\n    System.Console.WriteLine(\"not reached\"); }} }}\n"
    r = httpx.post(service_url + "/run_code", json={"language": "csharp", "code": code}, timeout=120).json()
    assert r["status"] == "Failed" and r["run_result"]["return_code"] == 134, r
    assert r["run_result"]["stdout"] == "" and "Assertion failed." in r["run_result"]["stderr"], r


def test_a_method_of_the_programs_own_named_assert_is_its_own(service_url):
    code = ("using static System.Diagnostics.Debug;\nclass P {\n    static void Assert(int x) { System.Console.WriteLine(x); }\n"
            "    static void Main() { Assert(7); }\n}\n")
    r = httpx.post(service_url + "/run_code", json={"language": "csharp", "code": code}, timeout=120).json()
    assert r["status"] == "Success" and r["run_result"]["stdout"] == "7\n", r
