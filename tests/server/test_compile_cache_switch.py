"""`coderl serve --compile-cache-mb N` / `--no-compile-cache`: the operator's switch of the compile
cache reaches the engine, wins over the CODERL_COMPILE_CACHE* variables, and /v1/capabilities shows
what is in force (and its hits) on a real service."""

from __future__ import annotations

import uuid

import httpx
import pytest

from coderl.cli import build_parser
from coderl.server.service import Service
from coderl.server.settings import Settings
from tests.helpers.service import running_service


def _engine_cache(argv: list[str]):
    args = build_parser().parse_args(["serve", *argv])
    return Service(Settings.from_env(compile_cache_mb=args.compile_cache_mb)).engine.compile_cache


def test_the_flags_reach_the_engine_and_win_over_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CODERL_CACHE", str(tmp_path))
    monkeypatch.delenv("CODERL_COMPILE_CACHE", raising=False)
    monkeypatch.delenv("CODERL_COMPILE_CACHE_MB", raising=False)
    assert _engine_cache([]).max_bytes == 1024 << 20
    assert _engine_cache(["--compile-cache-mb", "7"]).max_bytes == 7 << 20
    assert _engine_cache(["--no-compile-cache"]) is None
    monkeypatch.setenv("CODERL_COMPILE_CACHE_MB", "3")
    assert _engine_cache([]).max_bytes == 3 << 20
    monkeypatch.setenv("CODERL_COMPILE_CACHE", "0")
    assert _engine_cache([]) is None
    assert _engine_cache(["--compile-cache-mb", "5"]).max_bytes == 5 << 20  # the command line wins


@pytest.mark.parametrize("argv", [["--compile-cache-mb", "0"], ["--compile-cache-mb", "9", "--no-compile-cache"]])
def test_a_bad_switch_is_a_one_line_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["serve", *argv])
    assert exit_.value.code != 0 and "compile-cache" in capsys.readouterr().err


def test_capabilities_show_the_cache_in_force_and_its_hits():
    source = f'#include <cstdio>\nint main(){{puts("{uuid.uuid4().hex}");}}\n'  # compiled nowhere before
    with running_service(slots=1, compile_cache_mb=7) as url:
        for _ in range(2):
            reply = httpx.post(url + "/v1/run", json={"language": "cpp", "code": source}, timeout=120).json()
            assert reply["run"]["status"] == "ok", reply
        assert httpx.get(url + "/v1/capabilities").json()["compile_cache"] == {"max_mb": 7, "hits": 1, "misses": 1}
    with running_service(slots=1, no_compile_cache=True) as url:
        assert httpx.get(url + "/v1/capabilities").json()["compile_cache"] is None
