"""C#'s Debug.Assert fails a program as on .NET (MultiPL-E's C# tests are Debug.Assert calls in Main):
on Mono it only logged, so a WRONG solution exited 0 and was accepted on ScaleBox's assert route
(found by SandboxFusion's own test_csharp_assertion_error against coderl serve)."""

from __future__ import annotations

import httpx

TESTS = ("    }\n    public static void Main(string[] args) {\n"
         "    Debug.Assert(Add((2L), (3L)) == (5L));\n    Debug.Assert(Add((0L), (7L)) == (7L));\n    }\n\n}\n")
PROMPT = ("using System;\nusing System.Diagnostics;\nclass Problem {\n"
          "    public static long Add(long a, long b) {\n")


def _accepted(url: str, body: str) -> bool:
    completion = f"```csharp\n{PROMPT}        return {body};\n    }}\n```"
    config = {"language": "csharp", "provided_data": {"test_cases": {"type": "assert", "tests": TESTS,
                                                                     "stop_tokens": ["\n    }\n"]}}}
    reply = httpx.post(url + "/common_evaluate_batch", json={"completion": completion, "config": config}, timeout=120)
    assert reply.status_code == 200, reply.text
    return reply.json()["accepted"]


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
