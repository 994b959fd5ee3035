"""The typed callers' literals and signature reading (pure: no sandbox). That the programs they
build compile and judge right is shown per language by tests/golden/*/function_* on the real
sandbox and by tests/server/test_function_call_languages.py over HTTP."""

from __future__ import annotations

import pytest

from coderl.judge import harness
from coderl.judge.languages import CALLERS
from coderl.judge.signed import signature
from coderl.judge.spec import TestSpec

TRICKY = 'a"b\\c\n\t$\x01€'


@pytest.mark.parametrize("language, code, literal", [
    ("java", "static boolean f(String s) {", r'"a\"b\\c\n\t$\001€"'),
    ("cpp", "bool f(const string& s) {", r'std::string("a\"b\\c\n\t$\001€")'),
    ("csharp", "public static bool f(string s) {", r'"a\"b\\c\n\t$\u0001€"'),
    ("go", "func f(s string) bool {", r'"a\"b\\c\n\t$\u0001€"'),
    ("rust", "fn f(s: &str) -> bool {", r'"a\"b\\c\n\t$\u{1}€"'),
    ("rust", "fn f(s: String) -> bool {", r'String::from("a\"b\\c\n\t$\u{1}€")'),
    ("d", "bool f(string s) {", r'"a\"b\\c\n\t$\001€"'),
    ("kotlin", "fun f(s: String): Boolean {", r'"a\"b\\c\n\t\$\u0001€"'),
    ("bash", "f() {", "'a\"b\\c\n\t$\x01€'"),
    ("lua", "function f(s)", r'"a\"b\\c\n\t$\001€"'),
    ("racket", "(define (f s)", r'"a\"b\\c\n\t$\001€"'),
])
def test_strings_survive_as_source_literals(language, code, literal):
    assert CALLERS[language].arguments(code, "f", [TRICKY]) == [literal]


@pytest.mark.parametrize("language, code, literals", [
    ("java", "public List<Integer> f(int[] xs, long k, double d) {",
     ["new int[]{1, 2}", "3L", "0.5"]),
    ("cpp", "vector<long long> f(vector<int>& xs, long long k, double d) {",
     ["std::vector<int>{1, 2}", "3LL", "0.5"]),
    ("csharp", "public List<int> f(List<int> xs, long k, double d) {", ["new List<int>{1, 2}", "3L", "0.5"]),
    ("go", "func f(xs []int, k, d int64) []int {", ["[]int{1, 2}", "3", "0"]),
    ("rust", "pub fn f(xs: &Vec<i32>, k: i64, d: f64) -> Vec<i32> {", ["&vec![1, 2]", "3", "0.5"]),
    ("d", "int[] f(int[] xs, long k, double d) {", ["cast(int[]) [1, 2]", "3L", "0.5"]),
    ("scala", "def f(xs: Array[Int], k: Long, d: Double): Int =", ["Array[Int](1, 2)", "3L", "0.5"]),
    ("kotlin", "fun f(xs: IntArray, k: Long, d: Double): Int {", ["intArrayOf(1, 2)", "3L", "0.5"]),
    ("lua", "function f(xs, k, d)", ["{1, 2}", "3", "0.5"]),
    ("r", "f <- function(xs, k, d)", ["list(1L, 2L)", "3L", "0.5"]),
    ("racket", "(define (f xs k d)", ["(list 1 2)", "3", "0.5"]),
])
def test_arguments_follow_the_parsed_signature(language, code, literals):
    args = [[1, 2], 3, 0 if language == "go" else 0.5]
    assert CALLERS[language].arguments(code, "f", args) == literals


def test_go_grouped_parameters_take_the_type_after_them():
    assert CALLERS["go"].params("func f(a, b int, s string) bool {", "f") == ["int", "int", "string"]


def test_a_missing_function_still_builds_a_program_so_its_compiler_reports_it():
    """No readable signature is the submission's fault: a compile error, not a rejected request."""
    source = CALLERS["java"].program("class Other {}", "add", [[1, 2]])
    assert "add(1, 2)" in source


@pytest.mark.parametrize("language, code, args, why", [
    ("java", "class NoF {}", [{"a": 1}], "only numbers, booleans, strings and lists"),
    ("java", "int f(Map<String, Integer> m) {", [1], "not supported in java"),
    ("cpp", "int f(int x) {", ["one"], "not a number"),
    ("cpp", "int f(int x) {", [1.5], "not an integer"),
    ("verilog", "function integer f;", ["x"], "integers"),
    ("bash", "f() {", [[1]], "not lists"),
])
def test_arguments_a_caller_cannot_express_are_a_clear_error(language, code, args, why):
    with pytest.raises(ValueError, match=why):
        CALLERS[language].program(code, "f", [args])


def test_the_case_stdin_carries_index_and_signature_only():
    """Expected outputs and arguments stay out of stdin: the arguments are literals in the program."""
    spec = TestSpec(mode="function", fn_name="f", cases=[{"args": [1], "output": 99}, {"args": [2], "output": 98}])
    stdin = harness.case_stdin(spec, 1, "nonce", None, "cpp")
    assert stdin == f"1 {signature('nonce')}\n".encode()
    assert harness.supports("kotlin", "function") and not harness.supports("kotlin", "assert")


def test_a_name_that_is_not_an_identifier_is_refused():
    with pytest.raises(ValueError, match="not an identifier"):
        CALLERS["cpp"].program("int f(int x) {}", "f); system(\"id\"", [[1]])
