"""The gateway link of remote sessions: a harness in a session sandbox of a real `coderl serve`
reaches a real gateway over the network (TCP, here on loopback) through its session's relay, with
its own session's credential and nothing else: its model calls (plain and streamed) land in its gateway session; another
session's credential (key, header or path), the gateway's admin routes, an oversized body, and a
direct connection to the gateway or the service are all refused."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from unittest import mock

import pytest

from coderl.client import SessionService
from coderl.gateway.backends import ReplayBackend
from coderl.gateway.chat import ChatFormat
from coderl.gateway.core import Gateway, SessionConfig
from coderl.gateway.server import serve
from coderl.sandbox.session import SessionLimits
from coderl.swe.harness import run_in_remote_sandbox

# A stdlib harness: every probe's HTTP status (or the connection error), printed as one JSON line.
PROBE = r'''
import json, os, socket, urllib.request, urllib.error
base = os.environ["OPENAI_BASE_URL"]  # http://127.0.0.1:18001/v1
root = base[:-3]
def call(path, key=None, body=None, method="POST", headers=()):
    h = {"content-type": "application/json", **dict(headers)}
    if key:
        h["authorization"] = "Bearer " + key
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(root + path, data=data, headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return [r.status, json.loads(r.read())]
    except urllib.error.HTTPError as e:
        return [e.code, json.loads(e.read() or b"{}")]
chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16}
def stream(key):  # server-sent events, relayed as they come (chunked)
    req = urllib.request.Request(base + "/chat/completions", data=json.dumps({**chat, "stream": True}).encode(),
                                 headers={"content-type": "application/json", "authorization": "Bearer " + key})
    with urllib.request.urlopen(req, timeout=60) as r:
        events = [line for line in r.read().decode().splitlines() if line.startswith("data: ")]
    return "stream ok" if events[-1] == "data: [DONE]" and "hello" in "".join(events) else "bad stream: %r" % events
own, other = os.environ["OPENAI_API_KEY"], os.environ["OTHER_SESSION"]
out = {
    "own": call("/v1/chat/completions", own, chat),
    "own_stream": stream(own),
    "no_key": call("/v1/models", None, None, "GET"),
    "other_key": call("/v1/chat/completions", other, chat),
    "other_header": call("/v1/chat/completions", own, chat, headers=[("x-coderl-session", other)]),
    "other_path": call(f"/s/{other}/v1/chat/completions", own, chat),
    "admin_read": call(f"/sessions/{own}", own, None, "GET"),
    "admin_open": call("/sessions", own, {"id": "x" * 20}),
    "admin_close": call(f"/sessions/{other}", own, None, "DELETE"),
    "big": call("/v1/chat/completions", own, {**chat, "pad": "x" * (17 << 20)}),
}
for name, port in (("gateway_direct", int(os.environ["GATEWAY_PORT"])), ("service_direct", int(os.environ["SERVICE_PORT"]))):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        out[name] = "connected"
    except OSError as e:
        out[name] = type(e).__name__
print(json.dumps({k: (v if isinstance(v, str) else [v[0], (v[1].get("error") or {}).get("code")]) for k, v in out.items()}))
'''


@pytest.fixture(scope="module")
def service_url(tmp_path_factory):
    from tests.helpers.service import running_service

    with mock.patch.dict(os.environ, {"CODERL_SESSION_DIR": str(tmp_path_factory.mktemp("sessions")),
                                      "CODERL_SESSION_POOL": "0"}), running_service(slots=1) as url:
        yield url


def test_a_sandbox_reaches_its_own_gateway_session_and_nothing_else(service_url, tokenizer, tmp_path):
    fmt = ChatFormat(tokenizer, {})
    gateway = Gateway(fmt, ReplayBackend(["hello from the model"], tokenizer, fmt.stop_ids,
                                         fallback="hello again"), model_name="m")
    own, other = "ep-" + uuid.uuid4().hex, "ep-" + uuid.uuid4().hex
    for sid in (own, other):
        gateway.open(sid, SessionConfig(max_context=4096, timeout_s=600))
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)

    async def main():
        # the worst case: the listener the relay reaches is an admin one too
        served = await serve(gateway, ["127.0.0.1:0"], admin_addresses=("127.0.0.1:0",))
        try:
            gateway_url = "http://" + served.addresses[0]
            async with SessionService(service_url) as sessions:
                return await run_in_remote_sandbox(
                    "python3 -I -c \"$PROBE\"", sessions=sessions, task_row=None, task="probe",
                    gateway_url=gateway_url, session_id=own, model="m", timeout_s=120,
                    limits=SessionLimits(episode_s=180, exec_s=150, memory_mb=512),
                    env={"PROBE": PROBE, "OTHER_SESSION": other, "GATEWAY_PORT": gateway_url.rsplit(":", 1)[1],
                         "SERVICE_PORT": service_url.rsplit(":", 1)[1]})
        finally:
            await served.stop()

    result = asyncio.run(main())
    assert result.exit_code == 0, result.output_tail
    seen = json.loads(result.output_tail.strip().splitlines()[-1])
    assert seen == {
        "own": [200, None], "own_stream": "stream ok", "no_key": [200, None],
        "other_key": [403, "relay_refused"], "other_header": [403, "relay_refused"],
        "other_path": [403, "relay_refused"],
        "admin_read": [403, "relay_refused"], "admin_open": [403, "relay_refused"],
        "admin_close": [403, "relay_refused"],
        "big": [413, "relay_refused"],
        "gateway_direct": "ConnectionRefusedError", "service_direct": "ConnectionRefusedError",
    }, seen
    assert (gateway.sessions[own].turns, gateway.sessions[other].turns) == (2, 0)
    assert gateway.sessions[other].state == "open"  # the admin close never reached it


def test_eval_swe_runs_the_harness_on_the_session_service(tokenizer, tmp_path, tmp_path_factory):
    """`coderl eval swe --harness ... --sessions-url ... --gateway-url ...`: each task's harness runs
    in a session sandbox of the service (the task named by its row), asks the gateway (over the
    relay) for its models and writes the answer into the work tree; the diff is graded by the same
    service: the file is in every patch, and the tasks stay unresolved (nothing fixed them)."""
    from coderl.eval.swe import SweEvalConfig, evaluate_swe
    from coderl.swe.task_set import build_task_set
    from tests.helpers.service import running_service

    out = tmp_path / "ev"
    build_task_set(out / "builtin")  # what load_tasks builds for --tasks builtin: the service's repositories
    fmt = ChatFormat(tokenizer, {})
    gateway = Gateway(fmt, ReplayBackend([], tokenizer, fmt.stop_ids), auto_open=True, model_name="remote-policy")
    harness = ("python3 -I -c \"import os, urllib.request; open('models.json', 'wb').write(urllib.request.urlopen("
               "os.environ['OPENAI_BASE_URL'] + '/models').read())\"")
    env = {"CODERL_SWE_REPOS": str(out / "builtin" / "repos"),
           "CODERL_SESSION_DIR": str(tmp_path_factory.mktemp("sessions"))}
    with mock.patch.dict(os.environ, env), running_service(slots=1) as url:
        async def main():
            served = await serve(gateway, ["127.0.0.1:0"])
            try:
                return await evaluate_swe(SweEvalConfig(
                    tasks="builtin", out_dir=str(out), cache_dir=tmp_path / "cache", harness=harness,
                    sessions_url=url, gateway_url="http://" + served.addresses[0], harness_timeout_s=120, limit=2))
            finally:
                await served.stop()

        summary = asyncio.run(main())
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert summary["tasks"] == 2 and summary["statuses"] == {"unresolved": 2}, summary
    assert all("+++ b/models.json" in r["patch"] and "remote-policy" in r["patch"] for r in records), records
    assert all(r["agent_exit_code"] == 0 for r in records), records
