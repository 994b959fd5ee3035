"""Reading an agent's diff on the host: quoted paths, renames, protected files dropped, bad headers."""

from __future__ import annotations

import pytest

from coderl.swe.patch import MalformedDiff, split_diff, without_files

SRC = "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1 +1 @@\n-a\n+b\n"
TEST = "diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n@@ -1 +1 @@\n-x\n+y\n"
RENAME = ("diff --git a/tests/t.py b/src/evil.py\nsimilarity index 100%\nrename from tests/t.py\n"
          "rename to src/evil.py\n")
QUOTED = ('diff --git "a/t\\303\\251st \\"q\\".py" "b/t\\303\\251st \\"q\\".py"\nnew file mode 100644\n'
          '--- /dev/null\n+++ "b/t\\303\\251st \\"q\\".py"\n@@ -0,0 +1 @@\n+x\n')


def test_paths_quoted_and_renamed():
    assert split_diff(QUOTED)[0].paths == {'tést "q".py'}
    assert split_diff(RENAME)[0].paths == {"tests/t.py", "src/evil.py"}
    assert split_diff("") == []


def test_protected_sections_are_dropped_whatever_side_names_them():
    protected = frozenset({"tests/t.py"})
    kept, dropped = without_files(SRC + TEST + RENAME, protected)
    assert kept == SRC and dropped == ["tests/t.py"]  # the rename away from a test file is dropped whole
    conftest = SRC.replace("src/m.py", "pkg/conftest.py")
    config = SRC.replace("src/m.py", "pytest.ini")
    kept, dropped = without_files(conftest + config + SRC, frozenset())
    assert kept == SRC and dropped == ["pkg/conftest.py", "pytest.ini"]


@pytest.mark.parametrize("bad", ["just text", "diff --git a/x\n", "diff --git x/a y/b\n", 'diff --git "a/\\q" b/q\n'])
def test_unreadable_headers_are_malformed(bad):
    with pytest.raises(MalformedDiff):
        split_diff(bad)
