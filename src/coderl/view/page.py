"""The viewer page: ONE HTML file with its CSS, JS and data inlined (no network, opens from
file://).

Data layout, chosen so that 10,000 samples open fast: the table's columns are one small JSON array
(parsed at load); each sample's full record is one JSON line in a ``text/plain`` block that the
browser stores as text and the page parses only when that sample is opened (or scans as text for
the text filter). Every ``<`` in the data is written as ``\\u003c``, so no record can close its
``<script>`` block or open a comment.
"""

from __future__ import annotations

import html
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

from coderl.view.reader import RunRecords, overview

COLUMNS = ("step", "split", "kind", "group", "reward", "verdict", "grade_status", "sandbox_error", "tool_calls")


def build_page(run: RunRecords, title: str) -> tuple[str, int]:
    """The page's HTML and the bytes of sample data it carries (index + records)."""
    static = files("coderl.view") / "static"
    index = [[s[c] for c in COLUMNS] for s in run.samples]
    details = "\n".join(_json(s) for s in run.samples)
    index_json = _json(index)
    meta = {"title": title, "columns": COLUMNS, "skipped": run.skipped, "sources": run.sources,
            "overview": overview(run.samples), "samples": len(run.samples),
            "bytes_per_sample": round((len(index_json) + len(details)) / len(run.samples)) if run.samples else 0}
    page = (static / "page.html").read_text()
    parts = {"TITLE": html.escape(title), "CSS": (static / "viewer.css").read_text(),
             "JS": (static / "viewer.js").read_text(), "META": _json(meta), "INDEX": index_json, "DETAILS": details}
    # one pass: a placeholder's text in the data (a record quoting one) is never substituted again
    page = re.sub(r"@@(TITLE|CSS|JS|META|INDEX|DETAILS)@@", lambda m: parts[m.group(1)], page)
    return page, len(index_json.encode()) + len(details.encode())


def write_view(run: RunRecords, out: Path) -> int:
    """Write the page to ``out``; returns the bytes of sample data in it."""
    page, data_bytes = build_page(run, f"coderl view: {run.run_dir.name}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return data_bytes


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).replace("<", "\\u003c")
