"""Repository tasks whose environment is an image (SWE-bench's, SWE-Gym's, SWE-smith's, R2E-Gym's
``sweb.eval.*``-style images: the repository at /testbed, its Python and packages inside): the agent's
diff graded in a FRESH session from the pristine image, by the same unforgeable launcher as
``coderl.swe.grader`` with the image's own interpreter and pytest as the task environment.

Steps (the repository grader's, with the image in place of the snapshot and the virtualenv):
1. the image unpacked once (``image_rootfs``), its work dir snapshotted (``ImageRoot.pristine_git``:
   the diff's base, and the blob ids ``verdicts`` compares the protected files with);
2. a fresh image-backed session with the launcher's directory bound read-only; inside it, BEFORE
   any of the agent's change is there, the interpreter's site-packages and the pytest configuration
   its pytest picks (the launcher's ``locate``, pinned for the run);
3. the diff less the protected files' sections applied by our git from outside the root
   (``SessionHost.apply_diff``), the protected files and the pinned configuration written back from
   the snapshot by the session's PID 1, then the task's test patch;
4. the launcher (``-I -S``, spec and nonce on stdin, ``repo`` = the image's work dir) runs pytest;
   ``verdicts.decide`` reads its records. Statuses and rewards as the repository grader's.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shlex
import subprocess
from functools import partial
from pathlib import Path

from coderl.errors import SandboxError
from coderl.sandbox.image_build import obtained
from coderl.sandbox.image_rootfs import ImageRoot, unpacked
from coderl.sandbox.session import Session, SessionHost, SessionLimits
from coderl.swe.grade_status import GradeStatus
from coderl.swe.grader import DEFAULT_GRADE_LIMITS, GradeResult, Outcome, timed_grading
from coderl.swe.grading_run import INSIDE_DIR, LAUNCHER, base_tree, pytest_args, test_files
from coderl.swe.task import InvalidTask, RepoTask
from coderl.swe.verdicts import decide

DEFAULT_PYTHON = "python3"  # SWE-bench's images: /opt/miniconda3/envs/testbed/bin/python
# the interpreter, its site-packages, and every directory of its install (symlinks resolved in the image)
_PROBE = ("import json, os, sys, sysconfig; p = sysconfig.get_paths(); print(json.dumps([sys.executable, p['purelib'], "
          "sorted({os.path.realpath(d) for d in (sys.prefix, sys.base_prefix, sys.exec_prefix, p['purelib'], "
          "p['platlib'], p['stdlib'], p['platstdlib'])})]))")


class ImageRepoGrader:
    """Grades diffs against repository tasks that name an image; ``concurrency`` fresh sandboxes at a time."""

    def __init__(self, host: SessionHost, cache_dir: Path, *, limits: SessionLimits = DEFAULT_GRADE_LIMITS,
                 concurrency: int = 2, pull: bool = True, gate: asyncio.Semaphore | None = None) -> None:
        """``pull``: pull an image this machine lacks (False on a service: the cache, else the engine's
        local copy, else `ImageNotPulled`)."""
        self.host, self.cache_dir, self.limits, self.pull = host, cache_dir, limits, pull
        self._gate = gate or asyncio.Semaphore(concurrency)  # a bound shared with other graders, when given
        self._interpreters: dict[tuple, tuple[str, str, list[str]] | str] = {}

    async def grade(self, task: RepoTask, image_ref: str, diff: str, *, python: str = DEFAULT_PYTHON,
                    workdir: str | None = None, user: str | None = None) -> GradeResult:
        """``image_ref``: a reference or id (with ``pull``, also a Dockerfile path: built);
        ``workdir``/``user``: the task's, where they are not the image's."""
        return await timed_grading(task, diff, partial(self._grade, task, image_ref, python, (workdir, user)))

    async def _grade(self, task: RepoTask, image_ref: str, python: str, where: tuple[str | None, str | None],
                     kept: str, touched: list[str], outcome: Outcome) -> GradeResult:
        async with self._gate:
            try:
                image = await asyncio.to_thread(obtained if self.pull else unpacked, image_ref, self.cache_dir)
                workdir = os.path.normpath(where[0] or image.workdir)
                pristine = await asyncio.to_thread(image.pristine_git, workdir)
                base = await asyncio.to_thread(base_tree, pristine)
                found = await self._interpreter(image, python, workdir, where[1])
                if isinstance(found, str):
                    return outcome(GradeStatus.SANDBOX_ERROR, found)
                session = await self.host.open_image(image, workdir=workdir, user=where[1], limits=self.limits,
                                                     ro_binds=[str(INSIDE_DIR)], ro_mounts=_read_only(image, found[2]))
            except (SandboxError, subprocess.CalledProcessError) as exc:
                return outcome(GradeStatus.SANDBOX_ERROR, str(exc), tests_touched=touched)
            try:
                return await self._run(task, image, session, (kept, touched), found[:2], base, outcome)
            except (SandboxError, InvalidTask) as exc:
                return outcome(GradeStatus.SANDBOX_ERROR, str(exc), tests_touched=touched)
            finally:
                await session.close()

    async def _interpreter(self, image: ImageRoot, python: str, workdir: str,
                           user: str | None) -> tuple[str, str, list[str]] | str:
        """(the interpreter's path, its site-packages, the directories of its install) as the
        pristine image has them, asked once per (image, interpreter, user) in a session of its own
        (the grading session is opened with those directories read-only); or why not (the image's
        fault: ``sandbox_error``)."""
        key = (str(image.rootfs), python, workdir, user)
        if key not in self._interpreters:
            session = await self.host.open_image(image, workdir=workdir, user=user, limits=self.limits)
            try:
                probe = await session.exec(f"{shlex.quote(python)} -I -c {shlex.quote(_PROBE)}", timeout_s=60)
            finally:
                await session.close()
            if probe.exit_code != 0:
                return f"no {python} in the image: {probe.stderr.strip()[-300:]}"  # not kept: the image may be rebuilt
            exe, site_packages, dirs = json.loads(probe.stdout)
            self._interpreters[key] = (exe, site_packages, dirs)
        return self._interpreters[key]

    async def _run(self, task: RepoTask, image: ImageRoot, session: Session, change: tuple[str, list[str]],
                   interpreter: tuple[str, str], base: dict[str, str], outcome: Outcome) -> GradeResult:
        kept, touched = change
        exe, site_packages = interpreter
        files = test_files(task)
        located = await session.exec(" ".join(shlex.quote(a) for a in [exe, "-I", "-S", str(LAUNCHER), "locate",
                                                                         session.workdir, site_packages, *files]),
                                     timeout_s=120)
        try:
            found = json.loads(located.stdout)
        except json.JSONDecodeError:
            return outcome(GradeStatus.SANDBOX_ERROR, f"cannot find the task's pytest configuration: "
                                                      f"{located.stderr.strip()[-300:]}")
        rootdir, inifile = (_inside(found["rootdir"], session.workdir) or "."), _inside(found["inifile"], session.workdir)
        if kept.strip():
            error = await self.host.apply_diff(session, kept)
            if error:
                return outcome(GradeStatus.APPLY_FAILED, f"the diff does not apply: {error[-500:]}", tests_touched=touched)
        for rel in sorted({*touched, *([inifile] if inifile else [])}):  # the base commit's again, whatever the diff did
            await _restore(session, image, rel)
        if task.test_patch.strip():
            error = await self.host.apply_diff(session, task.test_patch)
            if error:
                return outcome(GradeStatus.SANDBOX_ERROR, f"the task's test patch does not apply: {error[-500:]}",
                               tests_touched=touched)
        root = os.path.normpath(os.path.join(session.workdir, rootdir))
        pinned = ["-c", f"{session.workdir}/{inifile}"] if inifile else ["-c", "/dev/null", "--confcutdir", root]
        spec = {"nonce": secrets.token_hex(32), "repo": session.workdir, "wanted": list(task.tests),
                "args": [*pytest_args(task.test_cmd), "-p", "no:cacheprovider", *pinned, "--rootdir", root, *files],
                "protected": sorted(task.protected_files), "site_packages": site_packages,
                "env": {"PATH": f"{os.path.dirname(exe)}:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp",
                        "LANG": "C.UTF-8", "TMPDIR": "/tmp", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}}
        run = await session.exec(f"exec {shlex.quote(exe)} -I -S {shlex.quote(str(LAUNCHER))}",
                                 timeout_s=self.limits.exec_s, stdin=json.dumps(spec).encode())
        verdict = decide(run, spec["nonce"], task.fail_to_pass, task.pass_to_pass, base)
        return outcome(verdict.status, verdict.message, fail_to_pass=verdict.fail_to_pass,
                       pass_to_pass=verdict.pass_to_pass, findings=verdict.findings, tests_touched=touched,
                       log_tail=run.stderr[-4000:])


def _read_only(image: ImageRoot, dirs: list[str]) -> list[tuple[str, str]]:
    """The interpreter's install directories (``dirs``, resolved in the image), each bound
    read-only from the pristine image over the session's own (outermost only): "trusted" paths,
    whose code the reporter takes as the environment's, cannot be written by the code under test.
    A directory that would hide the grader's own (bound at its host path) is left as it is."""
    out: list[tuple[str, str]] = []
    for path in sorted(dirs):
        inside = os.path.normpath(path)
        host = image.rootfs / inside.lstrip("/")
        if inside == "/" or any(inside.startswith(top.rstrip("/") + "/") for _, top in out):
            continue
        if str(INSIDE_DIR).startswith(inside.rstrip("/") + "/") or not host.is_dir():
            continue
        out.append((str(host), inside))
    return out


def _inside(path: str | None, workdir: str) -> str | None:
    rel = None if path is None else os.path.relpath(path, workdir)
    return None if rel is None or rel.startswith("..") else rel


async def _restore(session: Session, image: ImageRoot, rel: str) -> None:
    """``rel`` as the pristine image has it (removed when the image has none), written by PID 1."""
    tree = os.path.realpath(image.rootfs / session.workdir.lstrip("/"))
    original = os.path.realpath(os.path.join(tree, rel))  # a path out of the tree is never read on the host
    if original.startswith(tree + "/") and os.path.isfile(original):
        await session.write_file(rel, Path(original).read_bytes())
    else:
        await session.exec(f"rm -rf -- {shlex.quote(rel)}", timeout_s=60)
