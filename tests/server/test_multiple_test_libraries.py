"""MultiPL-E's Ruby, Perl and Lua tests load a test library (test-unit, Test::Deep, luaunit). Without
it every submission, right or wrong, failed on ScaleBox's assert route with the loader's error
scored as the program's runtime error (found by SandboxFusion's own test_ruby/test_perl/test_lua
against coderl serve). The prompts and tests are MultiPL-E's HumanEval_53_add, as SandboxFusion's
samples hold them; the right solution must be accepted with the library's own report, the wrong
one refused by a failing assertion (not a missing module)."""

from __future__ import annotations

import httpx
import pytest

MULTIPLE_ADD = {
    "ruby": ("# Add two numbers x and y\ndef add(x, y)\n", "  return BODY\nend\n",
             "require 'test/unit'\nclass TestHumanEval < Test::Unit::TestCase\n  def test_add\n"
             "    candidate = method(:add)\n    assert_equal(1, candidate.call(0, 1))\n"
             "    assert_equal(5, candidate.call(2, 3))\n    assert_equal(12, candidate.call(7, 5))\n  end\nend\n",
             ["\nclass", "\ndef", "\n#", "\n\n"]),
    "perl": ("# Add two numbers x and y\nsub add {\n    my($x, $y) = @_;\n", "    return BODY;\n}\n",
             "use Test::Deep;\n\n\nsub testhumaneval {\n    my $candidate = \\&add;\n"
             "        if(eq_deeply($candidate->(0, 1),1)) {\n        print \"ok!\" }else{\n        exit 1;\n        }\n"
             "        if(eq_deeply($candidate->(7, 5),12)) {\n        print \"ok!\" }else{\n        exit 1;\n        }\n"
             "}\n\ntesthumaneval();",
             ["\nsub", "\n#", "\n\n"]),
    "lua": ("-- Add two numbers x and y\nlocal function add(x, y)\n", "    return BODY\nend\n",
            "lu = require('luaunit')\n\nfunction test_humaneval()\nlocal candidate = add\n"
            "    lu.assertEquals(candidate(0, 1), 1)\n    lu.assertEquals(candidate(7, 5), 12)\nend\n\n"
            "os.exit(lu.LuaUnit.run())",
            ["\nlocal", "\nfunction", "\n--", "\n\n"]),
}
RIGHT = {"ruby": "x + y", "perl": "$x + $y", "lua": "x + y"}
WRONG = {"ruby": "x - y", "perl": "$x - $y", "lua": "x - y"}
#: what the test library's run prints when every assertion held / when one failed
PASSED = {"ruby": "1 tests, 3 assertions, 0 failures", "perl": "ok!ok!", "lua": "Ran 1 tests in"}
FAILED = {"ruby": "1 tests, 1 assertions, 1 failures", "perl": "", "lua": "1 failure"}


def _evaluate(url: str, language: str, body: str) -> dict:
    prompt, rest, tests, stop_tokens = MULTIPLE_ADD[language]
    completion = f"```{language}\n{prompt}{rest.replace('BODY', body)}```"
    config = {"language": language, "provided_data": {"test_cases": {"type": "assert", "tests": tests,
                                                                     "stop_tokens": stop_tokens}}}
    reply = httpx.post(url + "/common_evaluate", json={"completion": completion, "config": config}, timeout=120)
    assert reply.status_code == 200, reply.text
    return reply.json()


@pytest.mark.parametrize("language", sorted(MULTIPLE_ADD))
def test_multiple_tests_with_their_test_library(service_url, language):
    right = _evaluate(service_url, language, RIGHT[language])
    run = right["tests"][0]["exec_info"]["run_result"]
    assert right["accepted"] and PASSED[language] in run["stdout"], right
    wrong = _evaluate(service_url, language, WRONG[language])
    run = wrong["tests"][0]["exec_info"]["run_result"]
    assert not wrong["accepted"] and wrong["extra"]["verdict"] == "runtime_error", wrong
    assert run["return_code"] == 1 and FAILED[language] in run["stdout"] and run["stderr"] == "", wrong
