"""Reading an agent's git diff on the host, without applying it: which files it touches, and the
same diff without the parts that touch protected (test) files.

Pure text work on bytes the agent chose, so it trusts nothing: a header it cannot read makes the
whole diff malformed (``MalformedDiff``: the agent's fault, reward 0), and applying happens inside
a sandbox (``git apply``, which also refuses paths through symlinks and outside the tree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from coderl.errors import MalformedDiff

__all__ = ["FilePatch", "MalformedDiff", "split_diff", "test_runner_files", "without_files"]

_HEADER = re.compile(r'^diff --git (?P<a>"(?:[^"\\]|\\.)*"|\S+) (?P<b>"(?:[^"\\]|\\.)*"|\S+)$')
_RUNNER_CONFIG = frozenset({"pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"})
_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


@dataclass(frozen=True)
class FilePatch:
    old_path: str
    new_path: str
    text: str

    @property
    def paths(self) -> set[str]:
        return {p for p in (self.old_path, self.new_path) if p}


def split_diff(diff: str) -> list[FilePatch]:
    """One ``FilePatch`` per ``diff --git`` section. Text before the first header is ignored (git
    apply ignores it too)."""
    sections: list[FilePatch] = []
    lines = diff.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("diff --git ")]
    if diff.strip() and not starts:
        raise MalformedDiff("no 'diff --git' header in the patch")
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        m = _HEADER.match(lines[start].rstrip("\n"))
        if m is None:
            raise MalformedDiff(f"unreadable diff header: {lines[start][:200]!r}")
        old, new = _path(m["a"], "a/"), _path(m["b"], "b/")
        # rename/copy lines name the real paths when they differ from the header's
        for line in lines[start + 1:end]:
            if line.startswith(("rename from ", "copy from ")):
                old = _unquote(line.split(" ", 2)[2].rstrip("\n"))
            elif line.startswith(("rename to ", "copy to ")):
                new = _unquote(line.split(" ", 2)[2].rstrip("\n"))
            elif line.startswith(("@@", "GIT binary patch")):
                break
        sections.append(FilePatch(old, new, "".join(lines[start:end])))
    return sections


def test_runner_files(path: str) -> bool:
    """Files pytest reads before any test runs: a ``conftest.py`` anywhere, and the configuration
    at the top (``addopts = -p plugin`` would load the agent's plugin into the run)."""
    return path.rsplit("/", 1)[-1] == "conftest.py" or path in _RUNNER_CONFIG


def without_files(diff: str, protected: frozenset[str]) -> tuple[str, list[str]]:
    """The diff minus every section that touches a protected path or ``test_runner_files``, and
    the sorted paths so dropped."""
    kept, dropped = [], set()
    for fp in split_diff(diff):
        hit = {p for p in fp.paths if p in protected or test_runner_files(p)}
        if hit:
            dropped |= hit
        else:
            kept.append(fp.text)
    return "".join(kept), sorted(dropped)


def _path(token: str, prefix: str) -> str:
    path = _unquote(token)
    if not path.startswith(prefix):
        raise MalformedDiff(f"diff path without its {prefix!r} prefix: {token[:200]!r}")
    return path[len(prefix):]


def _unquote(token: str) -> str:
    """git's C-style quoting of unusual paths ("a/t\\303\\251st.py")."""
    if not (len(token) >= 2 and token[0] == token[-1] == '"'):
        return token
    out = bytearray()
    body, i = token[1:-1], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode()
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt.isdigit():
            out.append(int(body[i + 1:i + 4], 8) & 0xFF)
            i += 4
        elif nxt in _ESCAPES:
            out += _ESCAPES[nxt].encode()
            i += 2
        else:
            raise MalformedDiff(f"bad escape in a quoted path: {token[:200]!r}")
    return out.decode("utf-8", "surrogateescape")
