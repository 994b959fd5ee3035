"""ScaleBox's request shapes on both of its routes, on the real service: the per-case list, the
``test: [{input: {stdin}, output: {stdout}}]`` form, and ``assert`` tests as HumanEval (``test`` +
``entry_point``) and MultiPL-E (``tests`` + ``stop_tokens``) write them."""

from __future__ import annotations

import httpx
import pytest

from coderl.errors import InvalidTestSpec
from coderl.server.scalebox import multiple_program

ROUTES = ("/common_evaluate", "/common_evaluate_batch")
IS_PRIME = "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, n))\n"
HUMANEVAL = {"type": "assert", "entry_point": "is_prime",
             "test": "\n\ndef check(candidate):\n    assert candidate(6) == False\n    assert candidate(101) == True\n"}
CPP = ("#include <bits/stdc++.h>\nusing namespace std;\nbool is_not_prime(long n) {\n    if (n <= 1) return true;\n"
       "    for (long i = 2; i * i <= n; i++)\n        if (n % i == 0) return true;\n    return false;\n}")
MULTIPLE_CPP = {"type": "assert", "stop_tokens": ["\n}"],
                "tests": "}\nint main() {\n    auto candidate = is_not_prime;\n    assert(candidate((2)) == (false));\n"
                         "    assert(candidate((10)) == (true));\n}\n"}


def _post(url: str, route: str, language: str, completion: str, provided: dict, **extra) -> httpx.Response:
    body = {"completion": completion, "config": {"language": language, "provided_data": provided,
                                                  "extra": {"run_all_cases": True, **extra}}}
    return httpx.post(url + route, json=body, timeout=120)


def _accepted(url: str, route: str, language: str, completion: str, provided: dict) -> bool:
    r = _post(url, route, language, completion, provided)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["id"] == 0 and body["extracted_type"] in ("fenced", "incomplete_fenced", "heuristic", "empty")
    assert all(t["passed"] == (t["exec_info"]["status"] == "Success") for t in body["tests"])
    return body["accepted"]


@pytest.mark.parametrize("route", ROUTES)
def test_per_case_list_and_stdin_objects(service_url, route):
    add = "```python\ndef add(a, b):\n    return a + b\n```"
    calls = [{"type": "function_call", "input": [1, 2], "output": [3], "fn_name": "add"},
             {"type": "function_call", "input": [3, 4], "output": [7], "fn_name": "add"}]
    assert _accepted(service_url, route, "python", add, {"test_cases": calls})
    untyped = [{"input": c["input"], "output": c["output"], "fn_name": "add"} for c in calls]  # fn_name sets the kind
    assert _accepted(service_url, route, "python", add, {"test_cases": untyped})
    assert not _accepted(service_url, route, "python", add.replace("a + b", "a - b"), {"test_cases": calls})
    a_plus_b = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    stdio = [{"type": "stdin_stdout", "input": "1 2", "output": "3"}, {"input": "3 4", "output": "7"}]
    assert _accepted(service_url, route, "python", a_plus_b, {"test_cases": stdio})
    objects = [{"input": {"stdin": "1 2"}, "output": {"stdout": "3"}}, {"input": {"stdin": "3 4"}, "output": {"stdout": "7"}}]
    assert _accepted(service_url, route, "python", a_plus_b, {"test": objects})
    assert not _accepted(service_url, route, "python", "```python\nprint(3)\n```", {"test": objects})


@pytest.mark.parametrize("route", ROUTES)
def test_humaneval_asserts(service_url, route):
    good = f"```python\n{IS_PRIME}```"
    for provided in ({"test_cases": HUMANEVAL}, {"test_cases": [HUMANEVAL]}):
        assert _accepted(service_url, route, "python", good, provided)
    wrong = "```python\ndef is_prime(n):\n    return n == 6\n```"
    assert not _accepted(service_url, route, "python", wrong, {"test_cases": HUMANEVAL})
    early_exit = f"```python\n{IS_PRIME}import os\nos._exit(0)\n```"  # exits before check() runs
    assert not _accepted(service_url, route, "python", early_exit, {"test_cases": HUMANEVAL})


@pytest.mark.parametrize("route", ROUTES)
def test_multiple_asserts(service_url, route):
    """MultiPL-E C++: the completion is cut at its first stop token (the tests close the function);
    an unterminated fence, as in ScaleBox's own test, still counts."""
    assert _accepted(service_url, route, "cpp", f"```cpp\n{CPP}", {"test_cases": MULTIPLE_CPP})
    assert _accepted(service_url, route, "cpp", f"```cpp\n{CPP}\n```", {"test_cases": [MULTIPLE_CPP]})
    wrong = CPP.replace("return false;\n}", "return true;\n}")
    r = _post(service_url, route, "cpp", f"```cpp\n{wrong}\n```", {"test_cases": MULTIPLE_CPP}).json()
    assert not r["accepted"] and r["tests"][0]["exec_info"]["run_result"]["return_code"] != 0
    assert r["full_code"].endswith(MULTIPLE_CPP["tests"]) and r["extra"]["verdict"] == "runtime_error"
    broken = _post(service_url, route, "cpp", "```cpp\nbool is_not_prime(long n) {\n    return\n}\n```",
                   {"test_cases": MULTIPLE_CPP}).json()
    assert not broken["accepted"] and broken["extra"]["verdict"] == "compile_error"
    python_tests = {"type": "assert", "tests": "def check(candidate):\n    assert candidate(7) == True\n\ncheck(is_prime)\n",
                    "stop_tokens": ["\ndef", "\nclass", "\nif", "\nprint"]}
    assert _accepted(service_url, route, "python", f"```python\n{IS_PRIME}```", {"test_cases": python_tests})


@pytest.mark.parametrize("provided, why", [
    ({"test_cases": {"type": "assert", "entry_point": "f"}}, "test (HumanEval) or tests (MultiPL-E)"),
    ({"test_cases": [{"type": "function_call", "input": [1], "output": [1], "fn_name": "f"},
                     {"type": "function_call", "input": [1], "output": [1], "fn_name": "g"}]}, "different functions"),
    ({"test_cases": [{"input": "1"}]}, "every case needs 'output'"),
    ({"nothing": 1}, "needs test_cases or test"),
])
def test_unreadable_tests_are_a_422(service_url, provided, why):
    r = _post(service_url, "/common_evaluate", "python", "```python\nprint(1)\n```", provided)
    assert r.status_code == 422 and why in r.text


def test_scalebox_language_names_and_null_timeouts(service_url):
    body = {"completion": "```js\nconsole.log(3)\n```", "config": {
        "language": "javascript", "compile_timeout": None, "run_timeout": None, "mem_limit": 256,
        "provided_data": {"test": [{"input": {"stdin": ""}, "output": {"stdout": "3"}}]}}}
    r = httpx.post(service_url + "/common_evaluate", json=body, timeout=120)
    assert r.status_code == 200 and r.json()["accepted"], r.text
    body["config"]["custom_extract_logic"] = "submit_code_blocks([])"
    r = httpx.post(service_url + "/common_evaluate", json=body, timeout=120)
    assert r.status_code == 400 and "custom_extract_logic" in r.text


def test_multiple_program_cuts_only_where_the_tests_close_the_function():
    code = "int f() {\n    return 1;\n}\nint g() {\n}"
    assert multiple_program(code, "}\nT", ["\n}"], "cpp").endswith("int f() {\n    return 1;\n}\nT")
    assert multiple_program(code, "T", ["\n}"], "javascript") == code + "\nT"
    regex = multiple_program("a\nb\nc", "T", ["re:\\nc"], "bash")
    assert regex == "a\nb\nT"
    assert "class Main" in multiple_program("class Problem {\n}", "T", [], "java")
    with pytest.raises(InvalidTestSpec):
        multiple_program("x", "T", "\n}", "cpp")


def test_a_compile_error_is_reported_for_every_case(service_url):
    """ScaleBox compiles once per case, so each case it returns carries the compile error (never
    a "Total Timeout" for cases that merely were not run)."""
    objects = [{"input": {"stdin": "1 2"}, "output": {"stdout": "3"}}, {"input": {"stdin": "3 4"}, "output": {"stdout": "7"}}]
    r = _post(service_url, "/common_evaluate", "cpp", "```cpp\nint main( {\n```", {"test": objects}).json()
    assert not r["accepted"] and r["extra"]["verdict"] == "compile_error"
    assert [(t["exec_info"]["status"], t["exec_info"]["message"]) for t in r["tests"]] == [("Failed", "compile error")] * 2
