"""The one rule for a test that needs something outside the checkout (the reference rows in ../shared, a
toolchain, a prebuilt cache, a helper venv, a browser, root): where it is missing the test skips, naming
it, on a developer's machine, and FAILS with the same reason under CODERL_TEST_ALL=1, because CI
(.ci/run) provides every such thing and a suite that passes by skipping shows nothing.

A skip that is not about a missing resource (a platform fact CI lacks by design, the heavy tier) stays a
plain ``pytest.skip``/``skipif``."""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

import pytest

CI = os.environ.get("CODERL_TEST_ALL") == "1"


def require(available: bool, reason: str) -> None:
    """Inside a test or fixture: skip (locally) or fail (CI) with ``reason`` unless ``available``."""
    if available:
        return
    if CI:
        pytest.fail(f"{reason} (CODERL_TEST_ALL=1: CI provides this, so its absence fails)", pytrace=False)
    pytest.skip(reason)


def needs(available: bool, reason: str) -> pytest.MarkDecorator:
    """``require`` as a mark (a test's decorator, a module's ``pytestmark``), checked before the test's
    fixtures are set up (tests/conftest.py's ``pytest_runtest_setup``)."""
    return pytest.mark.needs(available, reason)


def check_needs_marks(item: pytest.Item) -> None:
    """Apply every ``needs`` mark of ``item``."""
    for mark in item.iter_markers("needs"):
        require(*mark.args)


def require_import(module: str, reason: str) -> ModuleType:
    """``module`` imported, after ``require`` (its absence skips locally, fails in CI)."""
    require(importlib.util.find_spec(module) is not None, reason)
    return importlib.import_module(module)
