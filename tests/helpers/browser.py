"""Debian's chromium driven by Playwright's Python package (never a downloaded browser), for the
viewer's tests and benchmark. Skips, naming what is missing, where either is absent."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.helpers.require import require

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def missing() -> str | None:
    """Why the browser cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e .[dev])"
    if not shutil.which(CHROMIUM):
        return f"{CHROMIUM} is missing (apt-get install chromium; scripts/setup.sh dev installs it)"
    return None


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless system chromium (a Playwright Browser)."""
    why = missing()
    require(why is None, why or "")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser: Any, path: str | Path, errors: list[str], fragment: str = "") -> Any:
    """The file's page (``file://`` URI of ``path``, then ``fragment``, e.g. ``#sample/0``) whose
    console errors and uncaught exceptions land in ``errors``."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.goto(Path(path).resolve().as_uri() + fragment)
    return page
