"""Pure parts of the judge: formats, extraction, comparison, the restricted unpickler."""

from __future__ import annotations

import base64
import json
import pickle
import zlib

import pytest

from coderl.errors import InvalidTestSpec, NoCodeFound, UnsupportedProblem
from coderl.judge import CompareOptions, extract_code, to_spec
from coderl.judge.compare import stdio, values
from coderl.judge.unpickle import decode_compressed_tests
from tests.helpers.shared_data import SHARED, needs_shared_data


def compressed(obj) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(obj))).decode()


def test_lcb_row_with_compressed_private_tests_and_functional_metadata():
    row = {"public_test_cases": json.dumps([{"input": "[1, 2]\n3", "output": "6", "testtype": "functional"}]),
           "private_test_cases": compressed(json.dumps([{"input": "[0]\n1", "output": "1", "testtype": "functional"}])),
           "metadata": json.dumps({"func_name": "f"})}
    spec = to_spec(row)
    assert spec.mode == "function" and spec.fn_name == "f"
    assert [c.args for c in spec.cases] == [[[1, 2], 3], [[0], 1]] and spec.cases[0].output == 6


def test_malicious_pickle_is_refused():
    class Evil:
        def __reduce__(self):
            import os

            return (os.system, ("echo pwned",))

    with pytest.raises(InvalidTestSpec, match="refusing to load"):
        decode_compressed_tests(base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode())


@pytest.mark.parametrize("obj,mode,n", [
    ({"inputs": ["1\n"], "outputs": ["2\n"]}, "stdio", 1),
    ({"input_output": json.dumps({"inputs": [[1]], "outputs": [[2]], "fn_name": "f"})}, "function", 1),
    ({"input": ["1"], "output": ["2"], "fn_name": None, "type": "stdin_stdout"}, "stdio", 1),
    ({"input": [[1, 2]], "output": [[3]], "fn_name": "f", "type": "function_call"}, "function", 1),
    ({"input": ["[1, 2]\n3"], "output": ["6"], "fn_name": "f", "type": "function_call", "json_input": True}, "function", 1),
    ({"language": "python", "test_cases": [{"type": "stdin_stdout", "input": "1", "output": "1", "fn_name": None}]}, "stdio", 1),
    ({"public_tests": {"input": ["a"], "output": ["b"]}, "private_tests": {"input": ["c"], "output": ["d"]}}, "stdio", 2),
    ([{"input": {"stdin": "1"}, "output": {"stdout": "1"}}], "stdio", 1),
    ("[{'input': '1', 'output': '2'}]", "stdio", 1),
    ({"functional": "def check(c):\n    assert c(1) == 2\ncheck(f)"}, "assert", 1),
    ({"prompt": "def f(x):\n", "test": "def check(c):\n    assert c(1) == 2", "entry_point": "f"}, "assert", 1),
    ({"test_list": ["assert f(1) == 2", "assert f(2) == 3"], "test_setup_code": ""}, "assert", 2),
    ({"mode": "stdio", "cases": [{"input": "", "output": ""}]}, "stdio", 1),
])
def test_every_format_normalises(obj, mode, n):
    spec = to_spec(obj)
    assert spec.mode == mode and len(spec.cases) == n


def test_wrapped_outputs_accept_out_or_out0():
    spec = to_spec({"inputs": [[1]], "outputs": [[2]], "fn_name": "f"})
    assert spec.compare.wrapped_output
    assert values(2, [2], spec.compare)[0] and values([2], [2], spec.compare)[0]
    assert not values(3, [2], spec.compare)[0]


@pytest.mark.parametrize("obj,message", [
    ({"inputs": ["1"], "outputs": []}, "inputs has 1 entries but outputs has 0"),
    ({"weird": 1}, "unrecognised test format"),
    ("not json (", "neither JSON nor a Python literal"),
    ({"mode": "function", "cases": [{"args": [], "output": 1}]}, "fn_name"),
    ({"mode": "stdio", "cases": []}, "at least one test case"),
    ([{"input": "1", "output": "2", "testtype": "functional"}], "need fn_name"),
])
def test_malformed_specs_name_the_problem(obj, message):
    with pytest.raises(InvalidTestSpec, match=message):
        to_spec(obj)


def test_extraction_rules():
    assert extract_code("<think>```python\nx=1\n```</think>```python\nprint(1)\n```").rule == "fence:python"
    assert extract_code("```python\na\n```\ntext\n```python\nb\n```").code == "b\n"
    assert extract_code("```\nprint(2)\n```", "python").rule == "fence:any"
    assert extract_code("here:\n```python\nprint(3)\n", "python").rule == "fence:open"
    assert extract_code("print(4)").rule == "raw"
    cpp = extract_code("```cpp\nint main(){}\n```")
    assert cpp.language == "cpp"
    with pytest.raises(NoCodeFound):
        extract_code("I cannot solve this.")
    with pytest.raises(NoCodeFound):
        extract_code("<think>```python\nprint(1)\n```</think> no code here")


@pytest.mark.parametrize("out,exp,ok", [
    ("3", "3\n", True), ("  3  \n\n", "3", True), ("3.0", "3", True), ("1 2", "1  2", True),
    ("3\n4", "3", False), ("", "3", False), ("YES", "yes", False), ("3.0000001", "3", False),
    ("1\n2", "1 2", False),
])
def test_stdio_lcb_exact(out, exp, ok):
    assert stdio(out, exp)[0] is ok


def test_stdio_options():
    assert stdio("3.0000001", "3", CompareOptions(float_abs_tol=1e-6))[0]
    assert stdio("YES", "yes", CompareOptions(case_insensitive=True))[0]
    assert stdio("1\n2", "1 2", CompareOptions(whitespace_tokens=True))[0]
    assert not stdio("1 2 3", "1 2", CompareOptions(whitespace_tokens=True))[0]


@pytest.mark.parametrize("obj", [
    {"problem": "\nThis is an interactive problem.\n\nGuess the number.", "tests": [{"input": "1", "output": "? 1"}]},
    {"question_id": "abc337_e", "question_content": "This is an interactive problem (a type of problem where ...)",
     "public_test_cases": "[]"},
    {"description": "This problem is interactive.", "public_tests": {"input": ["1"], "output": ["1"]}},
    {"interactive": True, "inputs": ["1"], "outputs": ["1"]},
    {"mode": "interactive", "cases": [{"input": "1", "output": "1"}]},
])
def test_interactive_problems_are_unsupported(obj):
    with pytest.raises(UnsupportedProblem, match="interactive"):
        to_spec(obj)


@needs_shared_data
def test_rllm_rows_with_statement_normalise_and_real_interactive_rows_are_refused():
    rows = json.loads((SHARED / "rllm-test" / "codeforces.json").read_text())
    interactive = [r for r in rows if "interactive problem" in r["problem"].lower()]
    assert interactive and len(interactive) < len(rows)
    for row in interactive:
        with pytest.raises(UnsupportedProblem):
            to_spec(row)
    plain = next(r for r in rows if r not in interactive)
    assert to_spec(plain).mode == "stdio"


def test_public_surface_is_sorted_and_importable():
    import coderl.judge

    assert coderl.judge.__all__ == sorted(coderl.judge.__all__)
    assert all(hasattr(coderl.judge, name) for name in coderl.judge.__all__)


def test_split_asserts_keeps_literals_outside():
    from coderl.judge.asserts import Reports, check_reports, split_asserts

    def reports(values, failed=False):
        return Reports(values, failed)

    split = split_asserts("def check(candidate):\n    assert candidate(1) == [1, (2, 3)], 'msg 42'\n"
                          "    assert 'x' == candidate(2)\n    assert candidate(3)\n    assert candidate(4) == y\n"
                          "check(f)\n")
    assert split.expected == ([1, (2, 3)], "x")
    assert "__coderl_emit(0, candidate(1))" in split.code and "__coderl_emit(1, candidate(2))" in split.code
    assert "msg 42" not in split.code and "assert candidate(3)" in split.code and "== y" in split.code
    assert check_reports(reports({0: ["[1, (2, 3)]"], 1: ["'x'", "'x'"]}), split.expected) == (True, "")
    assert not check_reports(reports({0: ["[1, [2, 3]]"], 1: ["'x'"]}), split.expected)[0]  # a list is not a tuple
    assert check_reports(reports({0: ["[1, (2, 3)]"]}), split.expected) == (False, "assert #2 did not run")
    assert not check_reports(reports({0: ["<object at 0x1>"], 1: ["'x'"]}), split.expected)[0]
    assert check_reports(reports({0: ["[1.0, (2, 3)]"], 1: ["'x'"]}), split.expected)[0]  # Python equality: 1.0 == 1
    ok_values = {0: ["[1, (2, 3)]"], 1: ["'x'"]}
    assert check_reports(reports(ok_values, failed=True), split.expected) == (False, "an assert of the tests failed")
    unparsable = "assert f(1) ==\n"
    assert split_asserts(unparsable).code == unparsable and split_asserts(unparsable).expected == ()
    assert split_asserts("assert 1 == 1").expected == ()  # nothing to report: both sides literal


def test_lcb_extraction_rule_is_livecodebenchs():
    from coderl.errors import NoCodeFound
    from coderl.judge.extract import extract_lcb

    assert extract_lcb("a\n```python\nx = 1\n```\nb\n```\ny = 2\n```").code == "y = 2"
    assert extract_lcb("<think>\n```\nz = 0\n```\n</think>").code == "z = 0"  # <think> is not stripped
    assert extract_lcb("```python\nx = 1\n```\nthen\n```python\ny = 2").code == "then"  # odd count: the prose
    for bad in ("```python\nx = 1", "x = 1", "```\n\n```"):
        with pytest.raises(NoCodeFound):
            extract_lcb(bad)


def test_primeintellect_rows_mixing_test_kinds_are_refused():
    from coderl.errors import InvalidTestSpec
    from coderl.judge import to_spec

    stdio = {"type": "stdin_stdout", "input": "1\n", "output": "1\n", "fn_name": None}
    call = {"type": "function_call", "input": [1], "output": [1], "fn_name": "f"}
    assert to_spec({"language": "python", "test_cases": [stdio, stdio]}, "primeintellect").mode == "stdio"
    assert to_spec({"language": "python", "test_cases": [call, call]}, "primeintellect").fn_name == "f"
    for cases, needle in (([stdio, call], "mix function_call and stdin_stdout"),
                          ([call, {**call, "fn_name": "g"}], "different functions"), ([stdio, "x"], "object")):
        with pytest.raises(InvalidTestSpec, match=needle):
            to_spec({"language": "python", "test_cases": cases}, "primeintellect")
