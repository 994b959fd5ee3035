"""Test services (``EnvSpec.services``): a service the suite needs, started inside the grading
sandbox before the tests and reached on its loopback, declared per (repository, version) in the
environment tables (requests' old suites get a local httpbin), never per row.

The grading test runs the real sandbox and grader over one of coderl's own tasks with a test
patch whose test fetches the URL a service's ``env`` gives (four gradings, some seconds each: one
over a TLS front, ``https://`` and ``http://`` to one port); the episode test opens agent episodes
on the same task (``LocalEpisodes``) and reaches the service from two commands. The gate over
SWE-bench's requests rows that needs them is a measurement (docs/agent.md), not a test; the
session service's leases: tests/server/test_session_services.py.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from coderl.cache import default_cache_dir
from coderl.errors import InvalidTask, SessionFailure
from coderl.sandbox.session import SessionHost, SessionLimits
from coderl.swe.env_tables import table_spec
from coderl.swe.environment import env_key
from coderl.swe.episodes import LocalEpisodes
from coderl.swe.grader import RepoGrader
from coderl.swe.store import RepoStore
from coderl.swe.task import EnvSpec, TestService
from coderl.swe.task_ref import TaskRef
from coderl.swe.task_set import build_task_set

PORT = 18765
SERVICE = {"name": "files", "argv": ["python", "-I", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "/tmp",
                                     str(PORT)],
           "port": PORT, "env": {"SERVICE_URL": f"http://127.0.0.1:{PORT}/"}}
TEST_PATCH = """\
diff --git a/tests/test_service.py b/tests/test_service.py
new file mode 100644
--- /dev/null
+++ b/tests/test_service.py
@@ -0,0 +1,7 @@
+import os
+import urllib.request
+
+
+def test_reaches_the_service():
+    with urllib.request.urlopen(os.environ["SERVICE_URL"], timeout=60) as r:
+        assert r.status == 200
"""


TLS_PORT = PORT + 1
TLS_SERVICE = {**SERVICE, "tls_port": TLS_PORT, "env": {"SERVICE_URL": f"http://127.0.0.1:{TLS_PORT}/"}}
TLS_TEST_PATCH = """\
diff --git a/tests/test_service.py b/tests/test_service.py
new file mode 100644
--- /dev/null
+++ b/tests/test_service.py
@@ -0,0 +1,9 @@
+import os
+import urllib.request
+
+
+def test_reaches_the_service():
+    netloc = os.environ["SERVICE_URL"].split("://", 1)[1]
+    for scheme in ("http://", "https://", "HTTPS://", "HTTP://"):
+        with urllib.request.urlopen(scheme + netloc, timeout=60) as r:
+            assert r.status == 200
"""


def test_a_spec_holds_its_services_and_refuses_the_runs_own_variables():
    spec = EnvSpec.from_value({"requirements": ["pytest"], "services": [SERVICE]})
    assert spec.services == (TestService.from_value(SERVICE),)
    assert EnvSpec.from_value(spec.to_dict()) == spec
    plain = EnvSpec.from_value({"requirements": ["pytest"]})
    assert "services" not in plain.to_dict()  # a spec without services keeps its row and its key
    assert env_key(spec) == env_key(plain)  # started at test time: the environment built is the same
    for env in ({"PYTEST_ADDOPTS": "-p evil"}, {"PATH": "/x"}, {"PYTHONPATH": "/x"}, {"LD_PRELOAD": "/x"}):
        with pytest.raises(InvalidTask, match="refused"):
            EnvSpec.from_value({"services": [{**SERVICE, "env": env}]})
    for bad in ({**SERVICE, "port": 80}, {**SERVICE, "argv": []}, {**SERVICE, "name": "a b"}, {**SERVICE, "x": 1},
                {**SERVICE, "tls_port": PORT}, {**SERVICE, "tls_port": 443}, {**SERVICE, "tls_port": "8443"}):
        with pytest.raises(InvalidTask):
            EnvSpec.from_value({"services": [bad]})
    tls = EnvSpec.from_value({"requirements": ["pytest"], "services": [TLS_SERVICE]})
    assert EnvSpec.from_value(tls.to_dict()) == tls and tls.test_tls and not spec.test_tls
    assert env_key(tls) != env_key(plain)  # its environment holds a certificate of its own
    with pytest.raises(InvalidTask, match="share"):  # a TLS port is a port too
        EnvSpec.from_value({"services": [TLS_SERVICE, {**SERVICE, "name": "other", "port": TLS_PORT}]})


def test_requests_versions_whose_suites_read_httpbin_url_get_a_local_httpbin():
    at = dict(source="psf/requests@" + "0" * 40, resolved_at="2014-03-15T17:42:11Z")
    spec = table_spec("psf/requests", "2.3", **at)
    assert spec is not None and [s.name for s in spec.services] == ["httpbin"]
    assert dict(spec.services[0].env)["HTTPBIN_URL"] == f"http://127.0.0.1:{spec.services[0].tls_port}/"
    assert any(r.startswith("httpbin==") for r in spec.requirements) and "certifi" in spec.requirements
    older = table_spec("psf/requests", "1.2", **at)  # no https:// to its httpbin: no TLS front
    assert older is not None and older.services[0].tls_port == 0 and not older.test_tls
    newer = table_spec("psf/requests", "2.10", **at)  # its suite uses pytest-httpbin's fixtures instead
    assert newer is not None and newer.services == ()


@pytest.fixture(scope="module")
def caesar(tmp_path_factory):
    root = tmp_path_factory.mktemp("svc")
    task = next(t for t in build_task_set(root) if "caesar" in t.instance_id)
    return root, task


def test_a_service_is_started_in_the_sandbox_and_reached_on_its_loopback(caesar):
    root, task = caesar
    wanted = dataclasses.replace(task, test_patch=TEST_PATCH, fail_to_pass=("tests/test_service.py::test_reaches_the_service",),
                                 pass_to_pass=())
    served = dataclasses.replace(wanted, env=EnvSpec.from_value({**task.env.to_dict(), "services": [SERVICE]}))
    broken = {**SERVICE, "argv": ["python", "-c", "raise SystemExit(3)"]}
    dead = dataclasses.replace(wanted, env=EnvSpec.from_value({**task.env.to_dict(), "services": [broken]}))
    # https:// and http:// to one port: the TLS front, its certificate the environment's, trusted through SSL_CERT_FILE
    tls = dataclasses.replace(wanted, test_patch=TLS_TEST_PATCH,
                              env=EnvSpec.from_value({**task.env.to_dict(), "services": [TLS_SERVICE]}))

    async def main():
        async with SessionHost() as host:
            grader = RepoGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir())
            return await grader.grade_many([(served, ""), (wanted, ""), (dead, ""), (tls, "")])

    with_service, without, not_started, over_tls = asyncio.run(main())
    assert (over_tls.status, over_tls.reward) == ("resolved", 1.0), over_tls
    assert (with_service.status, with_service.reward) == ("resolved", 1.0), with_service
    assert (without.status, without.reward) == ("unresolved", 0.0), without  # no service, no SERVICE_URL
    assert not_started.status == "sandbox_error" and not_started.reward is None, not_started
    assert "files exited with 3" in not_started.message, not_started


def test_an_agent_episode_reaches_the_services_its_grading_starts(caesar):
    """An episode on a task whose environment declares services (``LocalEpisodes.open``) has them
    started in its sandbox by the grader's starter, kept from one command to the next (the session
    kills what a command starts when it returns, not them), with their variables and certificate;
    one that does not start fails the open (SessionFailure: never an episode without them)."""
    root, task = caesar
    tls = dataclasses.replace(task, env=EnvSpec.from_value({**task.env.to_dict(), "services": [TLS_SERVICE]}))
    dead = dataclasses.replace(task, env=EnvSpec.from_value(
        {**task.env.to_dict(), "services": [{**SERVICE, "argv": ["python", "-c", "raise SystemExit(3)"]}]}))
    fetch = "python -c \"import os, urllib.request as u; print(u.urlopen('{0}://' + os.environ['SERVICE_URL'].split('://')[1], timeout=60).status)\""

    async def main():
        async with SessionHost() as host:
            grader = RepoGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir())
            episodes = LocalEpisodes(host)
            snapshot, env = await grader.prepare(tls)
            session = await episodes.open(TaskRef.of_repo_task(tls, repo_dir=snapshot, env_dir=env), env={},
                                          limits=SessionLimits(episode_s=300))
            try:
                first = await session.exec(fetch.format("https"))
                second = await session.exec(fetch.format("http") + " && " + fetch.format("HTTPS"))
            finally:
                await session.close()
            snapshot, env = await grader.prepare(dead)
            with pytest.raises(SessionFailure, match="files exited with 3"):
                await episodes.open(TaskRef.of_repo_task(dead, repo_dir=snapshot, env_dir=env), env={},
                                    limits=SessionLimits(episode_s=300))
            return first, second

    first, second = asyncio.run(main())
    assert (first.exit_code, first.stdout.split()) == (0, ["200"]), first
    assert (second.exit_code, second.stdout.split()) == (0, ["200", "200"]), second
