"""Function-call judging beyond Python on ScaleBox's routes, in the completion shapes its own tests
send (a bare C++/Go/Rust function, a ``public static`` Java method without a class, a Lua or bash
function), on the real service: accepted when right, not when wrong, a compile error when the
function is missing, and a clear 400 for an argument the caller cannot express."""

from __future__ import annotations

import httpx
import pytest

STRINGS = [["abca"], ["aabc"], ["a 11 c d"], ["2020"], ["a!@€£#$%^&*()_-+=}]{[|':;?/>.<,~"]]
DOUBLED = [[False], [True], [True], [False], [False]]
DOUBLE_CHECK = {
    "cpp": "bool double_check(string s) {\n  for (size_t i = 0; i + 1 < s.size(); i++)\n"
           "    if (tolower(s[i]) == tolower(s[i + 1])) return true;\n  return false;\n}",
    "go": "import \"unicode\"\n\nfunc double_check(s string) bool {\n\tfor i := 0; i+1 < len(s); i++ {\n"
          "\t\tif unicode.ToLower(rune(s[i])) == unicode.ToLower(rune(s[i+1])) {\n\t\t\treturn true\n\t\t}\n\t}\n"
          "\treturn false\n}",
    "java": "public static boolean double_check(String s) {\n  for (int i = 0; i + 1 < s.length(); i++)\n"
            "    if (Character.toLowerCase(s.charAt(i)) == Character.toLowerCase(s.charAt(i + 1))) return true;\n"
            "  return false;\n}",
}
ADD = {"lua": "function add(a, b)\n  return a + b\nend", "bash": "add() {\n  echo $(($1 + $2))\n}",
       "rust": "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}"}


def _post(url: str, route: str, language: str, completion: str, provided: dict) -> httpx.Response:
    body = {"completion": f"```{language}\n{completion}\n```",
            "config": {"language": language, "compile_timeout": 60, "run_timeout": 20, "provided_data": provided,
                       "extra": {"run_all_cases": True}}}
    return httpx.post(url + route, json=body, timeout=300)


def _batch(url: str, language: str, completion: str) -> dict:
    provided = {"test_cases": {"type": "function_call", "fn_name": "double_check", "input": STRINGS,
                               "output": DOUBLED}}
    r = _post(url, "/common_evaluate_batch", language, completion, provided)
    assert r.status_code == 200, r.text
    return r.json()


def _add(url: str, language: str, completion: str) -> dict:
    cases = [{"type": "function_call", "input": [1, 2], "output": [3], "fn_name": "add"},
             {"type": "function_call", "input": [3, 4], "output": [7], "fn_name": "add"}]
    r = _post(url, "/common_evaluate", language, completion, {"test_cases": cases})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("language", sorted(DOUBLE_CHECK))
def test_string_arguments_in_compiled_languages(service_url, language):
    right = _batch(service_url, language, DOUBLE_CHECK[language])
    assert right["accepted"], right
    wrong = _batch(service_url, language, DOUBLE_CHECK[language].replace("return true", "return false"))
    assert not wrong["accepted"]
    assert [t["passed"] for t in wrong["tests"]] == [True, False, False, True, True]


@pytest.mark.parametrize("language", sorted(ADD))
def test_numbers_in_scalebox_per_case_lists(service_url, language):
    assert _add(service_url, language, ADD[language])["accepted"]
    wrong = _add(service_url, language, ADD[language].replace("+", "*"))
    assert not wrong["accepted"]


def test_a_missing_function_is_the_submissions_compile_error(service_url):
    body = _add(service_url, "cpp", "int plus(int a, int b) { return a + b; }")
    assert not body["accepted"]
    assert all(t["exec_info"]["compile_result"]["status"] == "Finished"
               and t["exec_info"]["compile_result"]["return_code"] != 0 for t in body["tests"])


def test_an_argument_the_caller_cannot_express_is_a_400(service_url):
    provided = {"test_cases": [{"type": "function_call", "input": [{"k": 1}], "output": [1], "fn_name": "f"}]}
    r = _post(service_url, "/common_evaluate", "java", "public static int f(int x) { return x; }", provided)
    assert r.status_code == 400 and "not a number" in r.text
