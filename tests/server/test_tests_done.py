"""Red team of ScaleBox's assert route for MultiPL-E's non-Python tests: a completion that exits 0
before the tests (static initialisers, Go's init, a module constructor, exit in the function the
tests call, a top-level exit) is not accepted, because the program must print a per-request
sentinel where its tests end (`coderl.server.tests_done`); the right completion still is, and the
client's stdout never shows the sentinel. The programs are MultiPL-E's HumanEval_53_add shapes.
A few languages run in the default suite (cheap runtimes); every served one in the slow tier."""

from __future__ import annotations

import httpx
import pytest

from coderl.server.scalebox import go_test_program, multiple_program, read_tests
from coderl.server.tests_done import MARK, arm, new_sentinel, ran_to_end
from tests.helpers.require import require

PHP_TESTS = ("function candidate(...$args) {\n    return add(...$args);\n}\n\nfunction test(): void {\n"
             "    if (candidate(0, 1) !== 1) { throw new Exception(\"Test failed!\"); }\n"
             "    if (candidate(2, 3) !== 5) { throw new Exception(\"Test failed!\"); }\n}\n\ntest();")
JS_TESTS = ("const assert = require('node:assert');\n\n\nfunction test() {\n  let candidate = add;\n"
            "  assert.deepEqual(candidate(0, 1),1);\n  assert.deepEqual(candidate(2, 3),5);\n}\n\ntest();")
GO_TESTS = ("func TestAdd(t *testing.T) {\n\tfor i, tc := range [][2]int{{add(0, 1), 1}, {add(2, 3), 5}} {\n"
            "\t\tt.Run(fmt.Sprintf(\"test num % d\", i), func(t *testing.T) {\n"
            "\t\t\tif tc[0] != tc[1] {\n\t\t\t\tt.Errorf(\"expected %d, got %d\", tc[1], tc[0])\n\t\t\t}\n\t\t})\n\t}\n}\n")
GO_HEAD = 'package add_test\n\nimport (\n    "testing"\n    "fmt"\n)\n\n'

#: language -> (right completion, completion exiting 0 before the tests, tests, stop tokens)
CASES = {
    "bash": ("```bash\n#!/bin/bash\nadd() {\n    echo $(( $1 + $2 ))\n}\n```",
             "```bash\n#!/bin/bash\nexit 0\nadd() {\n    echo 0\n}\n```",
             '}\n\ncandidate() {\n    add "$@"\n}\n\nset -e\nrun_test() {\n    [[ $(candidate "0" "1") = "1" ]]\n'
             '    [[ $(candidate "2" "3") = "5" ]]\n}\n\nrun_test', ["\n}"]),
    "javascript": ("```javascript\nfunction add(x, y){\n  return x + y;\n}\n```",
                   "```javascript\nprocess.exit(0);\nfunction add(x, y){\n  return 0;\n}\n```", JS_TESTS, ["\nfunction "]),
    "typescript": ("```typescript\nfunction add(x: number, y: number): number {\n  return x + y;\n}\n```",
                   "```typescript\ndeclare var process: any;\nprocess.exit(0);\n"
                   "function add(x: number, y: number): number {\n  return 0;\n}\n```",
                   "declare var require: any;\n" + JS_TESTS, ["\nfunction "]),
    "cpp": ("```cpp\nlong add(long x, long y) {\n    return x + y;\n}\n```",
            "```cpp\n#include <cstdlib>\nstatic int early = (std::exit(0), 0);\nlong add(long x, long y) {\n"
            "    return 0;\n}\n```",
            "}\nint main() {\n    auto candidate = add;\n    assert(candidate((0), (1)) == (1));\n"
            "    assert(candidate((2), (3)) == (5));\n}\n", ["\n}"]),
    "ruby": ("```ruby\ndef add(x, y)\n  return x + y\nend\n```", "```ruby\nexit(0)\ndef add(x, y)\n  0\nend\n```",
             "require 'test/unit'\nclass TestHumanEval < Test::Unit::TestCase\n  def test_add\n"
             "    candidate = method(:add)\n    assert_equal(1, candidate.call(0, 1))\n"
             "    assert_equal(5, candidate.call(2, 3))\n  end\nend\n", ["\nclass", "\ndef", "\n#", "\n\n"]),
    "perl": ("```perl\nsub add {\n    my($x, $y) = @_;\n    return $x + $y;\n}\n```",
             "```perl\nexit 0;\nsub add {\n    return 0;\n}\n```",
             "use Test::Deep;\n\n\nsub testhumaneval {\n    my $candidate = \\&add;\n"
             "        if(eq_deeply($candidate->(0, 1),1)) {\n        print \"ok!\" }else{\n        exit 1;\n        }\n"
             "        if(eq_deeply($candidate->(2, 3),5)) {\n        print \"ok!\" }else{\n        exit 1;\n        }\n"
             "}\n\ntesthumaneval();", ["\nsub", "\n#", "\n\n"]),
    "lua": ("```lua\nlocal function add(x, y)\n    return x + y\nend\n```",
            "```lua\nos.exit(0)\nlocal function add(x, y)\n    return 0\nend\n```",
            "lu = require('luaunit')\n\nfunction test_humaneval()\nlocal candidate = add\n"
            "    lu.assertEquals(candidate(0, 1), 1)\n    lu.assertEquals(candidate(2, 3), 5)\nend\n\n"
            "os.exit(lu.LuaUnit.run())", ["\nlocal", "\nfunction", "\n--", "\n\n"]),
    "php": ("```php\n<?php\nfunction add($x, $y) {\n    return $x + $y;\n}\n```",
            "```php\n<?php\nexit(0);\nfunction add($x, $y) {\n    return 0;\n}\n```", PHP_TESTS, ["\nfunction"]),
    "r": ("```r\nadd <- function(x, y) {\n  x + y\n}\n```", "```r\nquit('no', 0)\nadd <- function(x, y) {\n  0\n}\n```",
          "test_humaneval <- function() {\ncandidate <- add\n    if(!identical(candidate(0, 1), 1)){quit('no', 1)}\n"
          "    if(!identical(candidate(2, 3), 5)){quit('no', 1)}\n}\ntest_humaneval()", ["\n#", "\n```"]),
    "racket": ("```racket\n#lang racket\n(define (add x y)\n  (+ x y))\n```",
               "```racket\n#lang racket\n(exit 0)\n(define (add x y)\n  0)\n```",
               "(require rackunit)\n\n(define (test-humaneval) \n\n  (let (( candidate add))\n"
               "    (check-equal? (candidate 0 1) 1)\n    (check-equal? (candidate 2 3) 5)\n))\n\n(test-humaneval)",
               ["\n(define", "\n#|", "\n;", "\n("]),
    "java": ("```java\nclass Problem {\n    public static long add(long x, long y) {\n        return x + y;\n    }\n}\n```",
             "```java\nclass Problem {\n    static { System.exit(0); }\n    public static long add(long x, long y) {\n"
             "        return 0;\n    }\n}\n```",
             "    }\n    public static void main(String[] args) {\n    assert(add((0l), (1l)) == (1l));\n"
             "    assert(add((2l), (3l)) == (5l));\n    }\n\n}\n", ["\n    }\n"]),
    "csharp": ("```csharp\nclass Problem {\n    public static long Add(long a, long b) {\n        return a + b;\n    }\n}\n```",
               "```csharp\nclass Problem {\n    static Problem() { System.Environment.Exit(0); }\n"
               "    public static long Add(long a, long b) {\n        return 0;\n    }\n}\n```",
               "    }\n    public static void Main(string[] args) {\n    Debug.Assert(Add((0L), (1L)) == (1L));\n"
               "    Debug.Assert(Add((2L), (3L)) == (5L));\n    }\n\n}\n", ["\n    }\n"]),
    "d": ("```d\nlong add(long x, long y) {\n    return x + y;\n}\n```",
          "```d\nshared static this() { import core.stdc.stdlib : exit; exit(0); }\nlong add(long x, long y) {\n"
          "    return 0;\n}\n```",
          "\n\nunittest\n{\n    alias candidate = add;\n    assert(candidate(0L, 1L) == 1L);\n"
          "    assert(candidate(2L, 3L) == 5L);\n}\nvoid main(){}", ["\n\n", "\nvoid", "\nbool", "\nint"]),
    "rust": ("```rust\nfn add(x: isize, y: isize) -> isize {\n    x + y\n}\n```",
             "```rust\nfn add(x: isize, y: isize) -> isize {\n    std::process::exit(0)\n}\n```",
             "}\n\nfn main() {\n    let candidate = add;\n    assert_eq!(candidate(0, 1), 1);\n"
             "    assert_eq!(candidate(2, 3), 5);\n}\n", ["\n}"]),
    "scala": ("```scala\nobject Problem {\n    def add(x : Long, y : Long) : Long = {\n        x + y\n    }\n}\n```",
              "```scala\nobject Problem {\n    def add(x : Long, y : Long) : Long = {\n        sys.exit(0)\n    }\n}\n```",
              "    }\n    def main(args: Array[String]) = {\n    assert(add((0l), (1l)) == (1l));\n"
              "    assert(add((2l), (3l)) == (5l));\n    }\n\n}\n", ["\n    }\n"]),
    "kotlin": ("```kotlin\nfun add(x : Int, y : Int) : Int {\n    return x + y\n}\n```",
               "```kotlin\nfun add(x : Int, y : Int) : Int {\n    kotlin.system.exitProcess(0)\n}\n```",
               "\nfun main() {\n    if (add(0, 1) != 1) {\n        throw Exception(\"test case 0 did not pass\")\n    }\n"
               "    if (add(2, 3) != 5) {\n        throw Exception(\"test case 1 did not pass\")\n    }\n}\n", ["\n}"]),
    "go": (f"```go\n{GO_HEAD}func add(x int, y int) int {{\n    return x + y\n}}\n```",
           "```go\n" + GO_HEAD.replace("import (", 'import (\n    "os"') +
           "func init() {\n    os.Exit(0)\n}\nfunc add(x int, y int) int {\n    return 0\n}\n```", GO_TESTS, ["\n}"]),
}
DEFAULT = ("bash", "javascript", "cpp", "ruby")


def _evaluate(url: str, language: str, completion: str, tests: str, stop_tokens: list[str]) -> dict:
    config = {"language": language, "provided_data": {"test_cases": {"type": "assert", "tests": tests,
                                                                     "stop_tokens": stop_tokens}}}
    reply = httpx.post(url + "/common_evaluate", json={"completion": completion, "config": config}, timeout=180)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_a_failing_rackunit_check_fails_the_program(service_url):
    """rackunit's checks at a module's top level print FAILURE and go on: the program exited 0 and
    ScaleBox's route accepted a wrong MultiPL-E Racket answer."""
    right, _, tests, stop_tokens = CASES["racket"]
    got = _evaluate(service_url, "racket", right.replace("(+ x y)", "(- x y)"), tests, stop_tokens)
    run = got["tests"][0]["exec_info"]["run_result"]
    assert got["accepted"] is False and run["return_code"] == 1 and "FAILURE" in run["stderr"], got


def _check(url: str, language: str) -> None:
    right, early, tests, stop_tokens = CASES[language]
    got = _evaluate(url, language, right, tests, stop_tokens)
    run = got["tests"][0]["exec_info"]["run_result"]
    assert got["accepted"] is True, got
    assert MARK not in run["stdout"] and MARK not in got["full_code"], got
    got = _evaluate(url, language, early, tests, stop_tokens)
    info = got["tests"][0]["exec_info"]
    assert got["accepted"] is False and got["extra"]["verdict"] == "wrong_answer", got
    assert info["status"] == "Failed" and "did not run to the end" in info["message"], got
    assert info["run_result"]["return_code"] == 0, got  # a clean exit: ScaleBox would have passed it


@pytest.mark.parametrize("language", DEFAULT)
def test_an_exit_before_the_tests_is_not_accepted(service_url, language):
    _check(service_url, language)


@pytest.mark.slow
@pytest.mark.parametrize("language", sorted(set(CASES) - set(DEFAULT)))
def test_an_exit_before_the_tests_is_not_accepted_in_every_language(service_url, language):
    served = httpx.get(service_url + "/v1/capabilities", timeout=60).json()["languages"]
    require(("go_test" if language == "go" else language) in served,
            f"{language} is not installed on this host (scripts/setup.sh installs it)")
    _check(service_url, language)


@pytest.mark.parametrize("language", sorted(CASES))
def test_every_multiple_shape_gets_its_sentinel(language):
    """No service: each language's tests get the sentinel (where its tests end), and the program
    the client is shown has none."""
    right, _, tests, stop_tokens = CASES[language]
    code = right.split("\n", 1)[1].rsplit("```", 1)[0]
    programs = read_tests({"test_cases": {"type": "assert", "tests": tests, "stop_tokens": stop_tokens}},
                          language, code)
    (sentinel,) = set(programs.sentinels)
    assert sentinel is not None and sentinel.startswith(MARK)
    (source,), (shown,) = programs.sources, programs.shown
    assert source.count(sentinel) == 1 and sentinel not in shown
    assert shown == (go_test_program(code, tests) if language == "go" else
                     multiple_program(code, tests, stop_tokens, language))


def test_the_sentinel_ends_the_tests_main_past_braces_in_literals_and_comments():
    tests = ('    }\n    public static void main(String[] args) {\n    assert(f("}{").equals("{"));\n'
             "    // }\n    /* } */ assert(g('}') == '{');\n    assert(h('\\'') == 1);\n    }\n\n}\n")
    armed = arm(tests, "java", "S")
    assert armed is not None and armed.endswith('    \nSystem.out.println("\\nS"); System.out.flush();\n}\n\n}\n')
    verbatim = '    static void Main() {\n    Debug.Assert(F(@"a\\") == @"}""{");\n    }\n}\n'
    assert arm(verbatim, "csharp", "S").endswith('Console.Write("\\nS\\n");\n}\n}\n')
    assert arm("no main here", "cpp", "S") is None and arm("x", "verilog", "S") is None
    lua = arm("function t()\n  if x then os.exit(1) end\nend\n\nos.exit(lu.LuaUnit.run())", "lua", "S")
    assert "if x then os.exit(1) end" in lua and "local __coderl_rc = (lu.LuaUnit.run())" in lua  # the last exit only


def test_the_sentinel_line_is_found_and_taken_out():
    sentinel = new_sentinel()
    assert sentinel != new_sentinel()
    assert ran_to_end(f"ok!ok!\n{sentinel}\nPASS\n".encode(), sentinel) == (True, b"ok!ok!PASS\n")
    assert ran_to_end(f"{sentinel}\n".encode(), sentinel) == (False, f"{sentinel}\n".encode())  # not on a line of its own
    assert ran_to_end(b"ok\n", sentinel) == (False, b"ok\n")
