"""The judge's per-language registry: one caller per language, each tied to its sandbox class."""

from __future__ import annotations

import pytest

from coderl.judge import harness
from coderl.judge.languages import CALLERS
from coderl.judge.languages.caller import Caller, JsonCaller
from coderl.judge.languages.typed import LiteralCaller
from coderl.judge.spec import TestSpec
from coderl.sandbox.languages import ALL, resolve


@pytest.mark.parametrize("name", sorted(CALLERS))
def test_a_caller_is_keyed_by_its_sandbox_languages_name(name: str) -> None:
    caller = CALLERS[name]
    assert isinstance(caller, Caller)
    assert resolve(name).name == name and type(caller).sandbox is resolve(name)  # type: ignore[attr-defined]
    assert type(caller).__name__ == f"{type(caller).sandbox.__name__}Caller"  # type: ignore[attr-defined]


def test_every_function_language_has_its_caller() -> None:
    """The registry is the one list of function-call languages; C is stdio-only today."""
    assert set(CALLERS) == {lang.name for lang in ALL} - {"c"}
    assert all(harness.supports(name, "function") for name in CALLERS) and not harness.supports("c", "function")


@pytest.mark.parametrize(("name", "stdin"), [("python", b'{"n": "x", "f": "f", "a": [1, "s"]}\n'),
                                             ("ruby", b'{"n": "x", "f": "f", "a": [1, "s"]}\n'),
                                             ("kotlin", None)])
def test_case_stdin_follows_the_callers_shape(name: str, stdin: bytes | None) -> None:
    caller = CALLERS[name]
    got = caller.case_stdin("f", [1, "s"], 1, "x")
    if isinstance(caller, LiteralCaller):
        assert got.startswith(b"1 ") and b"s" not in got[2:]
    else:
        assert got == stdin


def test_a_language_without_a_caller_is_a_clear_error() -> None:
    spec = TestSpec(mode="function", fn_name="f", cases=[{"args": [1], "output": 1}])
    with pytest.raises(ValueError, match="function tests are not judged for c"):
        harness.program(spec, "int f(int x) { return x; }", "c")


def test_json_callers_check_the_name_before_splicing_it() -> None:
    assert isinstance(CALLERS["php"], JsonCaller)
    with pytest.raises(ValueError, match="not an identifier"):
        CALLERS["php"].program("<?php function f() {}", "f(); system('id')", [[]])
