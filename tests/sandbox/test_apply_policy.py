"""One diff-application policy for every task kind (docs/agent.md, "One way to apply a diff"): the
same diff has the same outcome, and leaves the same file, in a snapshot task's session and in an image
task's session (an unpacked image's root holding the same tree at its work dir), because the snapshot,
image and Harbor graders all apply through ``SessionHost.apply_diff``: ``git apply`` exactly, else
``patch --fuzz=5 --forward``. Real sessions on the real sandbox; no image engine is needed (the root
is a directory, as ``coderl.sandbox.image_rootfs`` unpacks an image into one)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from coderl.sandbox import session_diffs
from coderl.sandbox.image_rootfs import ImageRoot
from coderl.sandbox.session import SessionHost

FILE = "m.txt"
BASE = "".join(f"line {i}\n" for i in range(1, 21))
SWE = Path(__file__).resolve().parents[2] / "src" / "coderl" / "swe"


def _diff(minus: str, plus: str, before: tuple[str, ...] = ("line 7", "line 8", "line 9")) -> str:
    """A one-hunk git diff of m.txt replacing line 10 (``minus``) with ``plus``, with ``before`` as
    the three lines of context above it."""
    context = "".join(f" {line}\n" for line in before)
    after = "".join(f" line {i}\n" for i in (11, 12, 13))
    return (f"diff --git a/{FILE} b/{FILE}\n--- a/{FILE}\n+++ b/{FILE}\n@@ -7,7 +7,7 @@\n"
            f"{context}-{minus}\n+{plus}\n{after}")


FIXED = BASE.replace("line 10\n", "LINE 10\n")
#: name -> (diff, what m.txt holds after it, or None where it must not apply)
CASES = {
    "exact": (_diff("line 10", "LINE 10"), FIXED),
    # a context line the tree does not have: git apply refuses, the fuzzy fallback applies it
    "fuzzy": (_diff("line 10", "LINE 10", before=("line 7", "line eight", "line 9")), FIXED),
    # the line it removes is not there: neither applies
    "stale": (_diff("line 99", "LINE 10"), None),
    # already applied (it reads reversed against the tree): refused, never applied backwards
    "reversed": (_diff("LINE 10", "line 10"), None),
}


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> tuple[Path, ImageRoot]:
    """The task's tree twice: a git snapshot (a snapshot task) and an image root holding it at /work."""
    root = tmp_path_factory.mktemp("apply")
    repo = root / "repo"
    repo.mkdir()
    (repo / FILE).write_text(BASE)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    for args in (["init", "-q"], ["add", FILE], ["commit", "-qm", "base"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    rootfs = root / "image" / "rootfs"
    (rootfs / "work").mkdir(parents=True)
    shutil.copy(repo / FILE, rootfs / "work" / FILE)
    return repo, ImageRoot(image_id="a" * 64, reference="test/apply", rootfs=rootfs, workdir="/work")


def _outcomes(repo: Path, image: ImageRoot) -> dict[tuple[str, str], tuple[bool, str]]:
    """(case, kind) -> (applied, m.txt afterwards), each in a fresh session."""
    async def one(host: SessionHost, kind: str, diff: str) -> tuple[bool, str]:
        session = await (host.open_image(image) if kind == "image" else host.open(repo))
        try:
            if kind == "snapshot, then":  # the grader's diff, restore and test patch in one sandbox: the same policy
                error, _ = await session_diffs.apply_then(host, session, diff, [], "")
            else:
                error = await host.apply_diff(session, diff)
            return error == "", ((session.work_tree or session.layer.merged) / FILE).read_text()
        finally:
            await session.close()

    async def main() -> dict[tuple[str, str], tuple[bool, str]]:
        async with SessionHost() as host:
            keys = [(case, kind) for case in CASES for kind in ("snapshot", "image", "snapshot, then")]
            done = await asyncio.gather(*(one(host, kind, CASES[case][0]) for case, kind in keys))
            return dict(zip(keys, done, strict=True))

    return asyncio.run(main())


def test_a_diff_has_the_same_apply_outcome_in_a_snapshot_and_an_image_task(trees):
    got = _outcomes(*trees)
    for case, (_, want) in CASES.items():
        assert got[(case, "snapshot")] == got[(case, "image")] == got[(case, "snapshot, then")], case
        assert got[(case, "snapshot")] == (want is not None, want or BASE), case  # a refused diff changes nothing


def test_every_grader_applies_through_the_one_policy():
    """No grader applies a diff its own way (a second policy is how one diff came out `resolved` as a
    snapshot task and `apply_failed` in its image)."""
    for name in ("grader.py", "image_grader.py", "harbor_grader.py"):
        source = (SWE / name).read_text()
        own = [line for line in source.splitlines() if "exec(" in line and ("git apply" in line or "patch -" in line)]
        assert ("apply_diff(" in source or "session_diffs.apply_then(" in source) and not own, (name, own)


def test_apply_then_applies_restores_and_applies_again_in_order(trees):
    """``session_diffs.apply_then`` (the grader's one sandbox for the agent's diff, the protected files'
    restore and the test patch): the diff first, then the restore (a protected file the diff changed is
    the base commit's again, one it added is gone), then the second diff; a diff that does not apply
    leaves the second untried; a second diff that does not apply is told apart from the first."""
    repo, _ = trees
    added = "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n"

    async def one(host: SessionHost, first: str, then: str) -> tuple[tuple[str, str], str, bool]:
        session = await host.open(repo)
        try:
            result = await session_diffs.apply_then(host, session, first + added, [FILE, "new.txt"], then)
            tree = session.work_tree or session.layer.merged
            return result, (tree / FILE).read_text(), (tree / "new.txt").exists()
        finally:
            await session.close()

    async def main() -> list:
        async with SessionHost() as host:
            return list(await asyncio.gather(
                one(host, CASES["exact"][0], CASES["exact"][0]),  # restored to BASE, then fixed again
                one(host, CASES["exact"][0], CASES["stale"][0]),
                one(host, CASES["stale"][0], CASES["exact"][0])))

    ok, then_refused, refused = asyncio.run(main())
    assert ok == (("", ""), FIXED, False)
    assert then_refused[0][0] == "" and then_refused[0][1] and then_refused[1:] == (BASE, False)
    assert refused[0][0] and refused[0][1] == "" and refused[1] == BASE
