"""A session's diffs, in and out: the one diff-application policy and the diff capture.

Both run in a second, short-lived sandbox over the episode's work tree (``SessionHost.beside``: the
session's boundary and cgroup, our own git and patch, never the agent's), so nothing the agent left
in the tree takes part and the host only handles the diff's text. Kept apart from ``session`` since
this is the part every grader relies on for what a change IS, and it reads best on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from coderl.errors import DiffUnavailable, SessionFailure
from coderl.sandbox import upper_changes
from coderl.sandbox.overlay import EpisodeLayer
from coderl.sandbox.spawn import kill_process_group, stderr_of

_CAPTURE_TIMEOUT_S = 120.0
_MAX_ARGV_BYTES = 128 << 10  # the written paths git is not tracking, as arguments of one command
MAX_DIFF_BYTES = 16 << 20
#: the fuzzy fallback after an exact ``git apply`` fails (``apply``): SWE-bench's
#: ``patch --batch --fuzz=5 -p1``, never reversing a diff, leaving no .orig or .rej files
APPLY_FALLBACK = "patch --batch --forward --fuzz=5 -p1 --no-backup-if-mismatch --reject-file=-"


class DiffSession(Protocol):
    """What the diffs read of a ``coderl.sandbox.session.Session``."""

    id: str
    repo_dir: Path
    layer: EpisodeLayer | None  # None: the episode's files were kept (``keep_state``)
    work_tree: Path | None
    pristine_git: Path | None


class BesideSandboxes(Protocol):
    """What runs a command in a fresh sandbox over a session's work tree (``SessionHost``)."""

    async def beside(self, session: DiffSession, command: Sequence[str], *, setenv: dict[str, str],
                     repo_ro: bool = False, pristine_git: Path | None = None) -> asyncio.subprocess.Process: ...


async def apply(host: BesideSandboxes, session: DiffSession, diff: str, restore: Sequence[str] = ()) -> str:
    """Apply ``diff`` to the session's work tree: '' or why not (git apply's complaint). The one
    diff-application policy of every task kind (snapshot, image, Harbor; docs/agent.md): ``git
    apply`` exactly, else SWE-bench's fallback, GNU ``patch --fuzz=5``, with ``--forward`` (a diff
    that looks reversed or already applied is refused, never applied backwards) and no backup or
    reject files left in the tree. Our own git and patch, run in a host-root sandbox over that tree
    (an image need not have either, and its copies are not ours). ``restore``: paths checked out
    from HEAD first, or removed where HEAD has none (a grader's protected files, in the same
    sandbox as its test patch; as arguments, never through a shell); an empty ``diff`` only
    restores."""
    chunks = _argv_chunks(list(restore))
    for chunk in chunks[:-1]:  # more paths than one command line holds: restored in runs of their own
        await _apply(host, session, "", chunk)
    return await _apply(host, session, diff, chunks[-1])


def _argv_chunks(paths: list[str]) -> list[list[str]]:
    chunks: list[list[str]] = [[]]
    size = 0
    for path in paths:
        if chunks[-1] and size + len(path) + 1 > _MAX_ARGV_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(path)
        size += len(path) + 1
    return chunks


# the policy as a shell function: ``one PATCH`` applies it (``git apply`` exactly, else the fallback),
# or writes the tail of git's complaint to descriptor 3 and fails with git's status
_APPLY_ONE = ("one() { git -c core.hooksPath=/dev/null apply --whitespace=nowarn \"$1\" 2>/tmp/err && return 0; s=$?; "
              f'{APPLY_FALLBACK} -i "$1" >/dev/null 2>&1 && return 0; tail -c 400 /tmp/err >&3; return $s; }}; ')
_RESTORE = 'for f do git -c core.hooksPath=/dev/null checkout -q HEAD -- "$f" 2>/dev/null || rm -rf -- "$f"; done; '
_APPLY_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CEILING_DIRECTORIES": "/"}
_THEN_FAILED = 4  # apply_then's exit status when its second diff does not apply


async def _apply(host: BesideSandboxes, session: DiffSession, diff: str, restore: list[str]) -> str:
    script = ("exec 3>&2 2>/dev/null; " + _APPLY_ONE + _RESTORE +
              "cat > /tmp/change.patch || exit 1; [ -s /tmp/change.patch ] || [ $# -eq 0 ] || exit 0; "
              "one /tmp/change.patch")
    code, err = await _run(host, session, script, ["apply", *restore], diff.encode("utf-8", "surrogateescape"))
    return "" if code == 0 else (err or f"exit {code}")


async def apply_then(host: BesideSandboxes, session: DiffSession, diff: str, restore: Sequence[str],
                     then: str) -> tuple[str, str]:
    """``apply(diff)``, then ``apply(then, restore=restore)``, in one sandbox instead of two (a
    grader's agent diff; then its protected files restored and the task's test patch): ('', ''),
    or why ``diff`` did not apply (``then`` not tried), or why ``then`` did not. The same policy,
    the paths as arguments; an empty ``then`` only restores."""
    chunks = _argv_chunks(list(restore))
    if len(chunks) > 1:  # more paths than one command line holds: as two applies
        error = await _apply(host, session, diff, [])
        return (error, "") if error else ("", await apply(host, session, then, restore))
    first = diff.encode("utf-8", "surrogateescape")
    script = ("exec 3>&2 2>/dev/null; n=$1; shift; " + _APPLY_ONE +
              'head -c "$n" > /tmp/change.patch && cat > /tmp/then.patch || exit 1; '
              "one /tmp/change.patch || exit 3; " + _RESTORE +
              f"[ -s /tmp/then.patch ] || exit 0; one /tmp/then.patch || exit {_THEN_FAILED}")
    code, err = await _run(host, session, script, ["apply", str(len(first)), *restore],
                           first + then.encode("utf-8", "surrogateescape"))
    why = err or f"exit {code}"
    return ("", "") if code == 0 else ("", why) if code == _THEN_FAILED else (why, "")


async def _run(host: BesideSandboxes, session: DiffSession, script: str, args: list[str], stdin: bytes) -> tuple[int, str]:
    proc = await host.beside(session, ["/bin/sh", "-c", script, *args], setenv=_APPLY_ENV)
    try:
        async with asyncio.timeout(_CAPTURE_TIMEOUT_S):
            _, err = await proc.communicate(stdin)
    except TimeoutError as exc:
        raise SessionFailure(f"session {session.id}: applying a diff took over {_CAPTURE_TIMEOUT_S:.0f} s") from exc
    finally:
        await kill_process_group(proc)
    return proc.returncode or 0, err.decode("utf-8", "replace").strip()


async def capture(host: BesideSandboxes, session: DiffSession, work_tree: str) -> str:
    """The episode's change against the pristine commit, made by our git in a fresh sandbox that sees
    the episode's files read-only at ``work_tree`` and the PRISTINE ``.git`` (``coderl.sandbox.session``'s
    docstring). The episode's processes must be dead already."""
    pristine = session.pristine_git or session.repo_dir.resolve() / ".git"
    layer = session.layer
    under = None if layer is None else (session.work_tree or layer.merged).relative_to(layer.merged)
    changed = None if layer is None else await asyncio.to_thread(upper_changes.changed_paths, layer.upper, str(under))
    if changed == []:  # the upper layer holds nothing under the work tree: it is the pristine one
        return ""
    git = " ".join(["git", "-c", "safe.directory=*", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
                    "-c", "core.quotePath=true", "-c", "core.excludesFile=/tmp/exclude"])
    # Only the paths the upper layer holds are compared (upper_changes): the index is HEAD's, and
    # only the tracked files at, under or above a written path are read again (on stdin,
    # NUL-separated; a missing one is removed), with the files that git's ignore rules let through
    # among the written paths it does not track (``ls-files -o`` over those paths alone, given as
    # literal arguments). No walk of the whole tree: the capture costs the same on any tree.
    # Unknown (None), or too many written paths for one command line: ``add -A`` of everything.
    stdin, untracked = b"", []
    if changed is not None:
        assert layer is not None and under is not None
        tracked = await asyncio.to_thread(upper_changes.tracked_paths, str(pristine))
        stdin, untracked = upper_changes.touched(tracked, changed, bytes(layer.upper / under))
        if sum(len(p) + 1 for p in untracked) > _MAX_ARGV_BYTES:
            stdin, untracked, changed = b"", [], None
    if changed is None:
        stage = f"{git} add -A"
    else:
        listed = f"{git} ls-files -z -o --exclude-standard -- \"$@\" >> /tmp/paths && " if untracked else ""
        stage = f"{listed}{git} update-index -z --add --remove --stdin < /tmp/paths"
    script = (
        # an index without stat data (read-tree): every file compared is compared by content, since
        # an edit in the second of the checkout that keeps the size would pass a stat check
        # (git's complaints go to a file: only their tail reaches the pipe, which nobody drains);
        # byte code is never part of a change (a snapshot holds compiled byte code, untracked)
        "exec 3>&2 2>/tmp/err; cat > /tmp/paths && printf '__pycache__/\\n*.py[co]\\n' > /tmp/exclude && "
        f"mkdir -p /tmp/objects && {git} read-tree HEAD && {stage} && "
        f"{git} diff --cached --binary --no-color --no-ext-diff --no-textconv --no-renames HEAD"
        " || { s=$?; tail -c 400 /tmp/err >&3; exit $s; }"
    )
    env = {"GIT_DIR": "/git", "GIT_WORK_TREE": work_tree, "GIT_INDEX_FILE": "/tmp/index",
           "GIT_OBJECT_DIRECTORY": "/tmp/objects", "GIT_ALTERNATE_OBJECT_DIRECTORIES": "/git/objects",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_LITERAL_PATHSPECS": "1"}
    command = ["/bin/sh", "-c", script, "capture", *(os.fsdecode(p) for p in untracked)]
    proc = await host.beside(session, command, setenv=env, repo_ro=True, pristine_git=pristine)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        async with asyncio.timeout(_CAPTURE_TIMEOUT_S):
            with contextlib.suppress(OSError, RuntimeError):  # a sandbox gone early: its exit says why
                proc.stdin.write(stdin)
                await proc.stdin.drain()
            proc.stdin.close()
            data = bytearray()  # read(n) returns what has arrived, so the cap is checked per chunk
            while chunk := await proc.stdout.read(1 << 20):
                data += chunk
                if len(data) > MAX_DIFF_BYTES:
                    raise DiffUnavailable(f"the diff is larger than {MAX_DIFF_BYTES >> 20} MiB")
            code = await proc.wait()
    except TimeoutError as exc:
        raise SessionFailure(f"session {session.id}: capturing the diff took over {_CAPTURE_TIMEOUT_S:.0f} s") \
            from exc
    finally:
        await kill_process_group(proc)
    if code != 0:
        why = await stderr_of(proc)
        raise DiffUnavailable(f"git could not read the episode's files (exit {code}): {why}")
    return data.decode("utf-8", "surrogateescape")
