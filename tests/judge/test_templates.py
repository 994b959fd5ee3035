"""The harness templates and their renderer: every placeholder filled, none left over, none invented."""

from __future__ import annotations

import importlib.resources

import pytest

from coderl.errors import CoderlError
from coderl.judge import harness
from coderl.judge.spec import FunctionCase, TestSpec
from coderl.judge.templates import PLACEHOLDER, fill, placeholders, render, template

TEMPLATES = sorted((lang.name, part.name.removesuffix(".tmpl"))
                   for lang in importlib.resources.files("coderl.judge.templates").iterdir() if lang.is_dir()
                   for part in lang.iterdir() if part.name.endswith(".tmpl"))


def test_fill_replaces_every_placeholder_once() -> None:
    assert fill("a {{x}} b {{y}} {{x}}", x="1", y="2") == "a 1 b 2 1"


def test_a_value_is_never_expanded_again() -> None:
    assert fill("<{{code}}>", code="{{code}} {{other}}") == "<{{code}} {{other}}>"


@pytest.mark.parametrize("values", [{}, {"x": "1"}, {"x": "1", "y": "2", "z": "3"}, {"x": "1", "typo": "2"}])
def test_fill_refuses_a_missing_or_stray_value(values: dict[str, str]) -> None:
    with pytest.raises(CoderlError, match="placeholders"):
        fill("{{x}} {{y}}", **values)


def test_the_shipped_templates_are_found() -> None:
    assert len(TEMPLATES) >= 20, TEMPLATES
    assert ("java", "main") in TEMPLATES and ("python", "prologue") in TEMPLATES


@pytest.mark.parametrize(("language", "part"), TEMPLATES)
def test_a_template_renders_with_no_marker_left(language: str, part: str) -> None:
    values = {name: f"<{name} value>" for name in placeholders(template(language, part))}
    text = render(language, part, **values)
    assert PLACEHOLDER.search(text) is None
    assert "{{" not in text, f"{language}/{part}: a malformed placeholder is left"


@pytest.mark.parametrize("language", ["java", "csharp", "scala", "kotlin", "cpp", "go", "rust", "d", "lua", "bash",
                                      "r", "racket", "javascript", "typescript", "php", "ruby", "perl", "python"])
def test_a_function_program_carries_no_placeholder(language: str) -> None:
    spec = TestSpec(mode="function", fn_name="f", cases=[FunctionCase(args=[1], output=1)])
    assert PLACEHOLDER.search(harness.program(spec, "", language)) is None
