"""Over real HTTP: a submission's error message names its own code, never an earlier one's (the
bug: a syntax error showed the line of the previous submission on that slot)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

EARLIER = "BBB_second = 2\n"


def _earlier_on_both_slots(url: str) -> None:
    body = {"code": EARLIER, "language": "python"}
    with ThreadPoolExecutor(2) as pool:
        for r in pool.map(lambda _: httpx.post(url + "/run_code", json=body, timeout=60), range(2)):
            assert r.json()["status"] == "Success"


def test_judge_compile_message_is_the_submissions_own(service_url):
    _earlier_on_both_slots(service_url)
    sub = {"code": "def f(:\n    pass\n", "tests": {"inputs": ["1\n"], "outputs": ["1\n"]}}
    r = httpx.post(service_url + "/v1/judge", json={"submissions": [sub]}, timeout=60).json()["results"][0]
    assert r["verdict"] == "compile_error" and "def f(:" in r["compile_message"], r
    assert "BBB_second" not in r["compile_message"] and "zygote" not in r["compile_message"], r


def test_run_code_syntax_error_is_the_submissions_own(service_url):
    _earlier_on_both_slots(service_url)
    r = httpx.post(service_url + "/run_code", json={"code": "def f(:\n    pass\n", "language": "python"}, timeout=60)
    body = r.json()
    stderr = body["run_result"]["stderr"]
    assert body["status"] == "Failed" and "def f(:" in stderr and "SyntaxError" in stderr, body
    assert "BBB_second" not in str(body) and "zygote" not in str(body), body
