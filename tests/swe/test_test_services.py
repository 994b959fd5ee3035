"""Test services (``EnvSpec.services``): a service the suite needs, started inside the grading
sandbox before the tests and reached on its loopback, declared per (repository, version) in the
environment tables (requests' old suites get a local httpbin), never per row.

The grading test runs the real sandbox and grader over one of coderl's own tasks with a test
patch whose test fetches the URL a service's ``env`` gives (three gradings, some seconds each);
the gate over SWE-bench's requests rows that needs it is a measurement (docs/agent.md), not a test.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from coderl.cache import default_cache_dir
from coderl.errors import InvalidTask
from coderl.sandbox.session import SessionHost
from coderl.swe.env_tables import table_spec
from coderl.swe.environment import env_key
from coderl.swe.grader import RepoGrader
from coderl.swe.store import RepoStore
from coderl.swe.task import EnvSpec, TestService
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
    for bad in ({**SERVICE, "port": 80}, {**SERVICE, "argv": []}, {**SERVICE, "name": "a b"}, {**SERVICE, "x": 1}):
        with pytest.raises(InvalidTask):
            EnvSpec.from_value({"services": [bad]})


def test_requests_versions_whose_suites_read_httpbin_url_get_a_local_httpbin():
    at = dict(source="psf/requests@" + "0" * 40, resolved_at="2014-03-15T17:42:11Z")
    spec = table_spec("psf/requests", "2.3", **at)
    assert spec is not None and [s.name for s in spec.services] == ["httpbin"]
    assert dict(spec.services[0].env)["HTTPBIN_URL"].startswith("http://127.0.0.1:")
    assert any(r.startswith("httpbin==") for r in spec.requirements)
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

    async def main():
        async with SessionHost() as host:
            grader = RepoGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir())
            return await grader.grade_many([(served, ""), (wanted, ""), (dead, "")])

    with_service, without, not_started = asyncio.run(main())
    assert (with_service.status, with_service.reward) == ("resolved", 1.0), with_service
    assert (without.status, without.reward) == ("unresolved", 0.0), without  # no service, no SERVICE_URL
    assert not_started.status == "sandbox_error" and not_started.reward is None, not_started
    assert "files exited with 3" in not_started.message, not_started
