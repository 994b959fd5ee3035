"""SandboxFusion and ScaleBox compatibility: verl's own client, and the recipe's request bodies."""

from __future__ import annotations

import json
import threading

import httpx

from coderl.judge.unpickle import decode_compressed_tests  # noqa: F401  (format used by LCB rows)


def test_ping(service_url):
    assert httpx.get(service_url + "/v1/ping").json() == "pong"


def test_run_code_wire_format(service_url):
    body = {"code": "import sys\nprint(open('in.txt').read() + sys.stdin.read())\nopen('o.txt','w').write('z')",
            "language": "python", "stdin": "B", "files": {"in.txt": "QQ=="}, "fetch_files": ["o.txt", "missing"],
            "run_timeout": 5, "memory_limit_MB": 256}
    r = httpx.post(service_url + "/run_code", json=body).json()
    assert r["status"] == "Success" and r["compile_result"] is None
    assert r["run_result"] == {**r["run_result"], "status": "Finished", "return_code": 0, "stdout": "AB\n"}
    assert r["files"] == {"o.txt": "eg=="}
    fail = httpx.post(service_url + "/run_code", json={"code": "raise SystemExit(2)", "language": "python"}).json()
    assert fail["status"] == "Failed" and fail["run_result"]["return_code"] == 2
    tle = httpx.post(service_url + "/run_code", json={"code": "while 1: pass", "language": "python", "run_timeout": 1}).json()
    assert tle["status"] == "Failed" and tle["run_result"]["status"] == "TimeLimitExceeded"
    ce = httpx.post(service_url + "/run_code", json={"code": "int main( {", "language": "cpp"}).json()
    assert ce["status"] == "Failed" and ce["run_result"] is None and ce["compile_result"]["return_code"] != 0
    big = httpx.post(service_url + "/run_code", json={"code": "print('x' * 700000)", "language": "python"}).json()
    assert big["status"] == "Success" and len(big["run_result"]["stdout"]) == 700001  # SF cut this or timed out


def test_verl_sandbox_fusion_client_scores_correctly(service_url):
    from verl.utils.reward_score.sandbox_fusion import compute_score

    tests = {"inputs": ["1 2\n", "5 6\n"], "outputs": ["3\n", "11\n"]}
    sem = threading.Semaphore(4)
    good = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    wrong = "```python\nprint(0)\n```"
    loop = "```python\nwhile True: pass\n```"
    url = service_url + "/run_code"
    assert compute_score(url, sem, 256, good, json.dumps(tests), timeout=5)[0] == 1.0
    assert compute_score(url, sem, 256, wrong, json.dumps(tests), timeout=5)[0] == 0.0
    assert compute_score(url, sem, 256, loop, json.dumps(tests), timeout=1)[0] == 0.0
    fn_tests = {"inputs": ["1\n2"], "outputs": ["3"], "fn_name": "add"}  # verl: JSON lines per argument
    fn_good = "```python\ndef add(a, b):\n    return a + b\n```"
    assert compute_score(url, sem, 256, fn_good, json.dumps(fn_tests), timeout=5)[0] == 1.0


def _eval(url, completion, test_cases, **extra):
    body = {"completion": completion, "config": {"language": "python", "compile_timeout": 30, "run_timeout": 30,
                                                  "provided_data": {"test_cases": test_cases},
                                                  "extra": {"run_all_cases": True, "total_timeout": 30, **extra}}}
    r = httpx.post(url + "/common_evaluate_batch", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def test_scalebox_recipe_bodies(service_url):
    stdio = {"type": "stdin_stdout", "input": ["1 2\n", "2 2\n"], "output": ["3\n", "4\n"], "fn_name": None}
    good = _eval(service_url, "```python\nprint(sum(map(int, input().split())))\n```", stdio)
    assert good["accepted"] and [t["passed"] for t in good["tests"]] == [True, True]
    assert good["tests"][0]["exec_info"]["run_result"]["stdout"] == "3\n"
    half = _eval(service_url, "```python\nprint(3)\n```", stdio)
    assert not half["accepted"] and [t["passed"] for t in half["tests"]] == [True, False]
    prefix = _eval(service_url, "```python\nprint(3)\n```",
                   {"type": "stdin_stdout", "input": [""], "output": ["3\n4\n"], "fn_name": None})
    assert not prefix["accepted"]  # ScaleBox accepted a prefix of the expected lines
    exit0 = _eval(service_url, "```python\nimport os\nos._exit(0)\n```", stdio)
    assert not exit0["accepted"]
    fc = {"type": "function_call", "fn_name": "f", "input": [[1, 2], [3, 4]], "output": [[3], [7]]}
    assert _eval(service_url, "```python\ndef f(a, b):\n    return a + b\n```", fc)["accepted"]
    js = {"type": "function_call", "fn_name": "f", "input": ["1\n2"], "output": ["3"], "json_input": True}
    assert _eval(service_url, "```python\nclass Solution:\n    def f(self, a, b):\n        return a + b\n```", js)["accepted"]
    asserts = {"type": "assert", "input": ["assert f(1) == 2"], "output": [None]}
    assert _eval(service_url, "```python\ndef f(x):\n    return x + 1\n```", asserts)["accepted"]
    assert not _eval(service_url, "```python\nimport sys\ndef f(x):\n    return 0\nsys.exit(0)\n```", asserts)["accepted"]


def test_scalebox_special_judge_and_total_timeout(service_url):
    checker = ("a = open('stdout.txt').read().split()\nb = open('answer.txt').read().split()\n"
               "import sys\nsys.exit(0 if sorted(a) == sorted(b) else 1)")
    tc = {"type": "stdin_stdout", "input": [""], "output": ["1 2 3\n"], "fn_name": None}
    ok = _eval(service_url, "```python\nprint(3, 1, 2)\n```", tc, special_judge_program=checker,
               special_judge_language="python")
    assert ok["accepted"]
    slow = {"type": "stdin_stdout", "input": [""] * 5, "output": ["x\n"] * 5, "fn_name": None}
    res = _eval(service_url, "```python\nimport time\ntime.sleep(0.6)\nprint('x')\n```", slow, total_timeout=1)
    assert not res["accepted"]
    assert any(t["exec_info"]["status"] == "SandboxError" and t["exec_info"]["message"] == "Total Timeout"
               for t in res["tests"])


def test_scalebox_compile_timeout_bounds_the_compiler(service_url):
    def body(timeout):
        return {"completion": "```cpp\n#include <iostream>\nint main(){int a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}\n```",
                "config": {"language": "cpp", "compile_timeout": timeout, "run_timeout": 10,
                           "provided_data": {"test_cases": {"type": "stdin_stdout", "input": ["1 2\n"],
                                                            "output": ["3\n"], "fn_name": None}},
                           "extra": {"run_all_cases": True}}}

    ok = httpx.post(service_url + "/common_evaluate_batch", json=body(60), timeout=120).json()
    assert ok["accepted"], ok
    cut = httpx.post(service_url + "/common_evaluate_batch", json=body(0.05), timeout=120).json()
    assert not cut["accepted"] and "time limit" in json.dumps(cut), cut


def test_scalebox_stops_at_the_first_failure_without_run_all_cases(service_url):
    tc = {"type": "stdin_stdout", "input": ["1\n", "2\n", "3\n"], "output": ["1\n", "9\n", "3\n"], "fn_name": None}
    res = _eval(service_url, "```python\nprint(input())\n```", tc, run_all_cases=False)
    assert not res["accepted"] and [t["passed"] for t in res["tests"]] == [True, False]


def test_scalebox_special_judge_sees_output_and_answer_under_their_names(service_url):
    """ScaleBox's names (sandbox-apis.md): stdin.txt the input, stdout.txt the EXPECTED output,
    answer.txt the contestant's; checked asymmetrically, so a swap would fail."""
    checker = ("import sys\ngot = open('answer.txt').read().split()\nwant = open('stdout.txt').read().split()\n"
               "sys.exit(0 if got == ['3', '1', '2'] and want == ['1', '2', '3'] else 1)")
    tc = {"type": "stdin_stdout", "input": [""], "output": ["1 2 3\n"], "fn_name": None}
    assert _eval(service_url, "```python\nprint(3, 1, 2)\n```", tc, special_judge_program=checker,
                 special_judge_language="python")["accepted"]
    assert not _eval(service_url, "```python\nprint(1, 2, 3)\n```", tc, special_judge_program=checker,
                     special_judge_language="python")["accepted"]
