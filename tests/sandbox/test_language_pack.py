"""The language pack beyond the golden programs: the one seccomp allowance a runtime needed, the
languages we cannot offer answered by name, and every language on the real service."""

from __future__ import annotations

import httpx
import pytest

from coderl.errors import UnknownLanguage
from coderl.sandbox import Limits, Program, languages
from tests.helpers.require import require

SCHEDULER = """
import os
policy = os.sched_param(0)
for who, pol in ((1, os.SCHED_OTHER), (1, os.SCHED_IDLE), (1, os.SCHED_OTHER | os.SCHED_RESET_ON_FORK),
                 (0, os.SCHED_IDLE)):
    try:
        os.sched_setscheduler(who, pol, policy)
        print(who, pol, "allowed")
    except OSError as exc:
        print(who, pol, exc.errno)
"""


def test_other_processes_scheduling_only_to_the_default_policy(engine):
    """mono sets SCHED_OTHER on each thread id; any other policy for another process stays denied."""
    ex = engine.execute(Program("python", SCHEDULER), [b""], Limits(cpu_s=2, wall_s=5))
    assert ex.results[0].stdout.decode().split("\n")[:4] == [
        "1 0 allowed", "1 5 1", f"1 {0 | 0x40000000} 1", "0 5 allowed"], ex.results[0]


WITH_LIBRARIES = sorted(lang.name for lang in languages.ALL if lang.libraries_hello is not None)


@pytest.mark.parametrize("name", WITH_LIBRARIES)
def test_multiple_test_libraries_load_in_the_sandbox(engine, name):
    """MultiPL-E's Ruby, Perl and Lua tests load a test library; without it every submission fails."""
    lang = languages.resolve(name)
    require(lang.available(), f"{name} toolchain not installed on this host (scripts/setup.sh installs it)")
    ex = engine.execute(Program(name, lang.libraries_hello), [b""], Limits(cpu_s=5, wall_s=10, memory_mb=256))
    assert ex.results[0].ok and ex.results[0].stdout == b"hello, coderl\n", ex.results[0]


@pytest.mark.parametrize("name", sorted(languages.UNAVAILABLE))
def test_languages_debian_lacks_are_named(name):
    with pytest.raises(UnknownLanguage, match="is not available: "):
        languages.resolve(name)


def test_every_language_is_served(service_url):
    caps = httpx.get(service_url + "/v1/capabilities").json()
    assert set(caps["languages"]) == {lang.name for lang in languages.SERVED if lang.available()}
    for name, why in (("julia", "Debian 12 does not package Julia"), ("swift", "Swift")):
        resp = httpx.post(service_url + "/v1/run", json={"language": name, "code": "println(1)"})
        assert resp.status_code == 422 and why in resp.json()["detail"], resp.text
        resp = httpx.post(service_url + "/run_code", json={"language": name, "code": "println(1)"})
        assert resp.status_code == 422 and why in resp.json()["detail"], resp.text


@pytest.fixture(scope="module")
def service_url():
    from tests.helpers.service import running_service

    with running_service(slots=1, queue=8) as url:
        yield url
