"""The native API and the service's contract on errors, health and metrics, over real HTTP."""

from __future__ import annotations

import uuid

import httpx
import pytest

STDIO = {"inputs": ["1 2\n", "3 4\n"], "outputs": ["3\n", "7\n"]}


def post(url, path, body, **kw):
    return httpx.post(url + path, json=body, timeout=60, **kw)


def test_judge_batch_mixing_verdicts(service_url):
    subs = [
        {"id": "good", "code": "a, b = map(int, input().split())\nprint(a + b)", "tests": STDIO},
        {"id": "wrong", "code": "print(3)", "tests": STDIO, "stop_on_first_failure": False},
        {"id": "tle", "code": "while True: pass", "tests": STDIO, "limits": {"cpu_s": 0.5, "wall_s": 2}},
        {"id": "ce", "language": "cpp", "code": "int main( {", "tests": STDIO},
        {"id": "resp", "response": "<think>hmm</think>\n```python\nprint(sum(map(int, input().split())))\n```", "tests": STDIO},
        {"id": "bad-tests", "code": "print(1)", "tests": {"nope": 1}},
        {"id": "no-code", "response": "I refuse.", "tests": STDIO},
    ]
    r = post(service_url, "/v1/judge", {"submissions": subs})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["isolation"] == "bwrap"
    by_id = {x["id"]: x for x in body["results"]}
    assert by_id["good"]["verdict"] == "accepted" and by_id["good"]["passed"] == 2
    assert by_id["wrong"]["verdict"] == "wrong_answer" and by_id["wrong"]["passed"] == 1 and by_id["wrong"]["first_failure"] == 1
    assert by_id["tle"]["verdict"] == "time_limit"
    assert by_id["ce"]["verdict"] == "compile_error" and by_id["ce"]["compile_message"]
    assert by_id["resp"]["verdict"] == "accepted" and by_id["resp"]["extraction_rule"] == "fence:python"
    assert by_id["bad-tests"]["error"]["type"] == "InvalidTestSpec"
    assert by_id["no-code"]["error"]["type"] == "NoCodeFound"


def test_run_one_program(service_url):
    r = post(service_url, "/v1/run", {"language": "python", "code": "print(input()[::-1])", "stdin": "abc\n"})
    assert r.status_code == 200 and r.json()["run"]["stdout"] == "cba\n"
    assert r.headers["X-Coderl-Isolation"] == "bwrap"


def test_run_reports_a_successful_compile(service_url):
    """A compiled language's compile step is in /v1/run's answer whether it succeeded or not; the
    same source again is a compile-cache hit, which says so (no compiler ran: 0 s)."""
    code = f"int main(void) {{ return 0; }} /* {uuid.uuid4()} */"  # a source no earlier test compiled
    ok = post(service_url, "/v1/run", {"language": "c", "code": code}).json()
    assert ok["compile"]["ok"] is True and ok["compile"]["wall_s"] > 0 and ok["run"]["status"] == "ok"
    assert ok["compile"]["cached"] is False
    again = post(service_url, "/v1/run", {"language": "c", "code": code}).json()
    assert again["compile"]["ok"] is True and again["compile"]["wall_s"] == 0 and again["run"]["status"] == "ok"
    assert again["compile"]["cached"] is True
    bad = post(service_url, "/v1/run", {"language": "c", "code": "int main( {"}).json()
    assert bad["compile"]["ok"] is False and "error" in bad["compile"]["message"]
    assert post(service_url, "/v1/run", {"language": "python", "code": "pass"}).json()["compile"] is None


def test_body_without_json_content_type_is_told_to_send_json(service_url):
    """curl -d without -H sends a form: the answer names the header, not a missing field."""
    r = httpx.post(service_url + "/v1/run", content=b'{"language": "python", "code": "pass"}',
                   headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415 and "Content-Type: application/json" in r.json()["detail"]
    r = httpx.post(service_url + "/v1/run", content=b'{"language": "python", "code": "pass"}')
    assert r.status_code == 415


def test_capabilities(service_url):
    caps = httpx.get(service_url + "/v1/capabilities").json()
    assert "python" in caps["languages"] and caps["isolation"] == "bwrap" and caps["default_limits"]["cpu_s"] > 0


@pytest.mark.parametrize("path,body,status,needle", [
    ("/v1/judge", {"submissions": []}, 422, "submissions"),
    ("/v1/judge", {"submissions": [{"code": "x", "tests": STDIO, "limits": {"cpu_s": -1}}]}, 422, "submissions.0.limits.cpu_s"),
    ("/v1/judge", {"subs": 1}, 422, "submissions"),
    ("/v1/run", {"language": "cobol", "code": "x"}, 422, "supported: "),
    ("/run_code", {"language": "python"}, 422, "code"),
])
def test_bad_input_is_a_clear_4xx(service_url, path, body, status, needle):
    r = post(service_url, path, body)
    assert r.status_code == status and needle in r.text and "Traceback" not in r.text


def test_malformed_json_and_oversized_body(service_url):
    r = httpx.post(service_url + "/v1/judge", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422
    r = httpx.post(service_url + "/v1/run", content=b"x" * (65 * 1024 * 1024), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_deeply_nested_payload_is_rejected_cleanly(service_url):
    nested = "[" * 100000 + "]" * 100000
    r = httpx.post(service_url + "/v1/judge", content=nested.encode(), headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500


def test_health_ready_metrics(service_url):
    assert httpx.get(service_url + "/healthz").json()["status"] == "ok"
    ready = httpx.get(service_url + "/readyz")
    assert ready.status_code == 200 and ready.json()["detail"] == "canary passed"
    text = httpx.get(service_url + "/metrics").text
    for name in ("coderl_requests_total", "coderl_request_seconds", "coderl_verdicts_total", "coderl_queue_depth",
                 "coderl_slots_busy", "coderl_sandbox_errors_total"):
        assert name in text
    assert 'route="/v1/judge"' in text


def test_openapi_docs(service_url):
    assert httpx.get(service_url + "/docs").status_code == 200
    assert "/v1/judge" in httpx.get(service_url + "/openapi.json").json()["paths"]


def test_program_cannot_reach_the_service(service_url):
    port = service_url.rsplit(":", 1)[1]
    code = (f"import urllib.request\ntry:\n    urllib.request.urlopen('http://127.0.0.1:{port}/healthz', timeout=2)\n"
            "    print('REACHED')\nexcept Exception as e:\n    print('blocked')")
    r = post(service_url, "/v1/run", {"language": "python", "code": code})
    assert r.json()["run"]["stdout"] == "blocked\n"


def test_unisolated_mode_says_so_everywhere():
    from tests.helpers.service import running_service

    with running_service(slots=1, isolation="none") as url:
        r = post(url, "/v1/run", {"language": "python", "code": "print(1)"})
        assert r.json()["isolation"] == "none" and "NO ISOLATION" in r.json()["warning"]
        assert r.headers["X-Coderl-Isolation"] == "none"
        assert "NO ISOLATION" in httpx.get(url + "/healthz").json()["warning"]
