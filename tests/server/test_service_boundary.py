"""The service's boundary (issue 42), each attack on the real `coderl serve`:

- a task row over HTTP carrying shell steps (``pre_install``), build variables, a project build or a
  package URL: refused with a 400 naming the field, on the grade route, the session route and the
  warm pool's route, and nothing ran (the step's marker file is never made);
- a task whose environment cannot be built: an answer with the reason (422/409), never a 500;
- the operator's API token (``--api-token-file``): coderl's routes refuse a request without it
  (401), health, metrics and the SandboxFusion drop-in route stay open, a session's own routes take
  the session's token, and `coderl.client` passes ``CODERL_API_TOKEN``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from unittest import mock

import httpx
import pytest

import coderl.server
from coderl.client import SandboxClient, SessionService
from coderl.errors import TokenRequired
from coderl.swe.task_set import build_task_set
from tests.helpers.service import running_service

TOKEN = "t0k3n-for-the-boundary-test"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def boundary(tmp_path_factory):
    root = tmp_path_factory.mktemp("boundary")
    tasks = build_task_set(root)
    token_file = root / "token"
    token_file.write_text(TOKEN + "\n")
    with mock.patch.dict(os.environ, {"CODERL_SWE_REPOS": str(root / "repos"),
                                      "CODERL_SESSION_DIR": str(tmp_path_factory.mktemp("sessions"))}), \
            running_service(slots=1, api_token_file=token_file) as url:
        os.environ.pop("CODERL_API_TOKEN", None)
        yield url, tasks, root


def _row(tasks, **environment_setup):
    return {**tasks[0].to_row(), "environment_setup": environment_setup}


ATTACKS = [
    ("pre_install", {"python": "3.11", "pre_install": ["touch {marker}; id >&2; exit 1"]}),
    ("build_env", {"python": "3.11", "build_env": {"LD_PRELOAD": "{marker}"}}),
    ("install", {"python": "3.11", "install": ". --config-settings={marker}"}),
    ("requirements", {"requirements": ["evil @ file://{marker}"]}),
    ("requirements", {"requirements": ["--index-url=http://127.0.0.1:9/{marker}"]}),
    ("requirement_files", {"python": "3.11", "requirement_files": ["../../{marker}"]}),
]


def _attack(spec: dict, marker) -> dict:
    return json.loads(json.dumps(spec).replace("{marker}", str(marker)))


@pytest.mark.parametrize(("field", "spec"), ATTACKS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(ATTACKS)])
def test_a_requests_shell_steps_are_a_400_and_nothing_runs(boundary, tmp_path, field, spec):
    url, tasks, _ = boundary
    marker = tmp_path / "ran"
    row = _row(tasks, **_attack(spec, marker))
    routes = [("/v1/swe/grade", {"items": [{"task": row, "patch": ""}]}),
              ("/v1/sessions", {"task": row}),
              ("/v1/sessions/warm", {"task": row})]
    for route, body in routes:
        r = httpx.post(url + route, json=body, headers=AUTH, timeout=120)
        assert r.status_code == 400, (route, r.status_code, r.text)
        assert r.json()["type"] == "UntrustedInput" and f"environment_setup.{field}" in r.json()["detail"], r.text
    assert not marker.exists()


def test_a_repo_name_is_never_a_path(boundary):
    url, tasks, _ = boundary
    r = httpx.post(url + "/v1/sessions", json={"task": {**tasks[0].to_row(), "repo": "../etc"}}, headers=AUTH,
                   timeout=60)
    assert r.status_code == 400 and "repo must be owner/name" in r.json()["detail"], r.text


@pytest.mark.parametrize(("spec", "status", "reason"), [
    ({"python": "3.99"}, 422, "no Python 3.99"),
    ({"python": "3.11", "source": "nobody/nothing@" + "0" * 40}, 422, "no snapshot"),
])
def test_an_environment_that_cannot_be_built_is_an_answer_not_a_500(boundary, spec, status, reason):
    url, tasks, _ = boundary
    row = _row(tasks, **spec)
    r = httpx.post(url + "/v1/sessions", json={"task": row}, headers=AUTH, timeout=120)
    assert (r.status_code, r.json()["type"]) == (status, "EnvBuildError") and reason in r.json()["detail"], r.text
    graded = httpx.post(url + "/v1/swe/grade", json={"items": [{"task": row, "patch": ""}]}, headers=AUTH,
                        timeout=120)
    assert graded.status_code == 200, graded.text
    assert reason in str(graded.json()["results"][0]), graded.text
    unknown = {**tasks[0].to_row(), "repo": "nobody/nothing"}
    r = httpx.post(url + "/v1/sessions", json={"task": unknown}, headers=AUTH, timeout=60)
    assert (r.status_code, r.json()["type"]) == (409, "RepoUnavailable"), r.text


def test_the_token_guards_coderls_routes_only(boundary, monkeypatch):
    url, _, _ = boundary
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-Coderl-Token": "wrong"}):
        r = httpx.get(url + "/v1/capabilities", headers=headers)
        assert (r.status_code, r.json()["type"]) == (401, "TokenRequired"), r.text
        assert r.headers["www-authenticate"] == "Bearer"
    r = httpx.post(url + "/v1/sessions", json={})
    assert r.status_code == 401, r.text
    for headers in (AUTH, {"X-Coderl-Token": TOKEN}):
        assert httpx.get(url + "/v1/capabilities", headers=headers).status_code == 200
    for open_route in ("/healthz", "/readyz", "/metrics"):
        assert httpx.get(url + open_route, timeout=60).status_code == 200, open_route
    drop_in = httpx.post(url + "/run_code", json={"code": "print(6 * 7)", "language": "python"}, timeout=60)
    assert drop_in.status_code == 200 and drop_in.json()["run_result"]["stdout"] == "42\n", drop_in.text

    async def through_the_client():
        async with SandboxClient(url, retries=0) as client:
            with pytest.raises(TokenRequired):
                await client.capabilities()
        monkeypatch.setenv("CODERL_API_TOKEN", TOKEN)
        async with SandboxClient(url, retries=0) as client:
            assert "languages" in await client.capabilities()
        async with SessionService(url) as sessions:  # a session's own routes: the session's token
            s = await sessions.open(None)
            try:
                assert (await s.exec("echo hi")).stdout == "hi\n"
            finally:
                await s.close()

    asyncio.run(through_the_client())


def test_the_service_reads_task_rows_only_as_requests():
    """A row reaches the service's code only through `task_from_request`: no module of
    coderl.server reads one as the operator's (``RepoTask.from_row``), so a new route cannot skip
    the check by reading rows the way the CLI does."""
    server = Path(coderl.server.__file__).parent
    offenders = [p.name for p in server.glob("*.py") if "RepoTask.from_row(" in p.read_text()]
    assert offenders == []
