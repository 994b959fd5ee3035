"""A row whose base tree needs a release newer than the row's own date (SWE-bench's
django__django-13447: created 2020-09-22, its base committed 2021-05-12, the tree requires
asgiref>=3.3.2 of 2021-02): resolved as of its base commit's date (``EnvSpec.resolved_at_fallback``)
only when the row's date leaves it unresolvable, the date used and why recorded in the resolution,
the environment and ``coderl data swe-bench``'s report; a row that resolves as of its own date is
never moved (issue 44 item 2).
Built for real, offline: a project whose build backend is in its tree, and a package index of this
test's own on the loopback whose files carry upload times (PEP 700), which uv's ``--exclude-newer``
reads (a ``--find-links`` folder has none: uv ignores the date there)."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from coderl.data.swe_bench import resolution_dates_by_instance
from coderl.errors import EnvBuildError
from coderl.swe.env_tables import table_spec
from coderl.swe.environment import LOCK, RESOLUTION_DATE, build_env, env_key, resolution_date
from coderl.swe.task import EnvSpec
from tests.swe.test_pin_overrides import PYTHON, tiny_project
from tests.swe.test_unit_repo_env import make_wheel

# pkgdate 1.0 uploaded in 2020, 2.0 in 2021
UPLOADED = {"1.0": "2020-01-01T00:00:00Z", "2.0": "2021-03-01T00:00:00Z"}
ROW_DATE, COMMIT_DATE = "2020-09-22T08:49:25Z", "2021-05-12T00:00:00Z"


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A PEP 691/700 index on the loopback serving pkgdate 1.0 and 2.0 with their upload times;
    uv is pointed at it (the build passes ``UV_*`` on) with a cache of its own."""
    wheels = {v: make_wheel(tmp_path / "wheels", "pkgdate", v) for v in UPLOADED}

    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:  # noqa: N802
            self.do_GET(head=True)

        def do_GET(self, head: bool = False) -> None:  # noqa: N802
            if self.path.rstrip("/") == "/simple/pkgdate":
                files = [{"filename": w.name, "url": f"/files/{w.name}", "upload-time": UPLOADED[v],
                          "hashes": {"sha256": hashlib.sha256(w.read_bytes()).hexdigest()}} for v, w in wheels.items()]
                body, kind = json.dumps({"meta": {"api-version": "1.1"}, "name": "pkgdate", "files": files,
                                         "versions": list(UPLOADED)}).encode(), "application/vnd.pypi.simple.v1+json"
            elif self.path.startswith("/files/") and (tmp_path / "wheels" / self.path[7:]).is_file():
                body, kind = (tmp_path / "wheels" / self.path[7:]).read_bytes(), "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def log_message(self, *args) -> None:  # type: ignore[no-untyped-def]
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("UV_INDEX_URL", f"http://127.0.0.1:{server.server_address[1]}/simple")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.delenv("UV_EXTRA_INDEX_URL", raising=False)
    yield
    server.shutdown()


def test_a_row_its_own_date_cannot_resolve_is_resolved_as_of_its_base_commit(tmp_path, index):
    cache, source = tiny_project(tmp_path, "newreq", ["pkgdate>=2"])
    spec = EnvSpec(python=PYTHON, install=".", source=source, resolved_at=ROW_DATE, resolved_at_fallback=COMMIT_DATE)

    env = build_env(spec, cache)

    assert "pkgdate==2.0" in (env / LOCK).read_text().replace("_", "-").lower().splitlines()
    moved = json.loads((env / RESOLUTION_DATE).read_text())
    assert (moved["resolved_at"], moved["row_date"]) == (COMMIT_DATE, ROW_DATE)
    assert "pkgdate" in moved["why"], moved  # uv's own words as of the row's date
    assert resolution_date(spec, cache) == moved  # the resolution's record
    memo = json.loads((cache / "resolutions" / f"{env_key(spec)}.json").read_text())
    assert memo["resolution_date"] == moved
    task = {"instance_id": "acme__newreq-1", "repo": "acme/newreq", "base_commit": source.split("@")[1],
            "FAIL_TO_PASS": ["t.py::t"], "environment_setup": spec.to_dict()}  # the builder's report
    assert resolution_dates_by_instance([task], {source: str(env)}, cache) == {"acme__newreq-1": moved}
    # without the later date the row is not resolvable, and says so
    with pytest.raises(EnvBuildError, match="pkgdate"):
        build_env(EnvSpec(python=PYTHON, install=".", source=source, resolved_at=ROW_DATE), cache)


def test_a_row_its_own_date_resolves_is_never_moved(tmp_path, index):
    cache, source = tiny_project(tmp_path, "oldreq", ["pkgdate>=1"])
    spec = EnvSpec(python=PYTHON, install=".", source=source, resolved_at=ROW_DATE, resolved_at_fallback=COMMIT_DATE)

    env = build_env(spec, cache)

    assert "pkgdate==1.0" in (env / LOCK).read_text().replace("_", "-").lower().splitlines()  # as of its own date
    assert not (env / RESOLUTION_DATE).exists() and resolution_date(spec, cache) == {}


def test_the_fallback_is_the_base_commits_date_only_when_later():
    common = {"source": "django/django@" + "0" * 40, "has_file": lambda path: path == "tests/requirements/py3.txt"}
    later = table_spec("django/django", "4.0", resolved_at=ROW_DATE, fallback_at=COMMIT_DATE, **common)
    assert later is not None and (later.resolved_at, later.resolved_at_fallback) == (ROW_DATE, COMMIT_DATE)
    assert EnvSpec.from_value(later.to_dict()) == later
    earlier = table_spec("django/django", "4.0", resolved_at=COMMIT_DATE, fallback_at=ROW_DATE, **common)
    plain = table_spec("django/django", "4.0", resolved_at=COMMIT_DATE, **common)
    assert earlier == plain and "resolved_at_fallback" not in plain.to_dict()  # its key is what it was
