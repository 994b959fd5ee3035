"""A grading run reads the snapshot's byte code (issue 49 item 5), never byte code a diff brought.

The grader no longer compiles the project afresh under a pycache prefix of its own when the
session's upper layer holds no byte code (``grading_run.written_byte_code``): the ``.pyc`` files
the work tree holds are then the snapshot's, compiled on the host from the pristine sources. A diff
that ships a ``.pyc`` (a binary patch: an agent's own diff never holds one, the capture excludes
byte code) has it removed before the run, like a protected file restored.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid

from coderl.cache import default_cache_dir
from coderl.sandbox.session import SessionHost
from coderl.swe.grader import RepoGrader
from coderl.swe.grading_run import written_byte_code
from coderl.swe.store import RepoStore, git
from tests.swe.test_grader_redteam import CALC_FIX, calc_task

# the fixed add, compiled by the environment's interpreter into byte code stamped with the pristine
# source's mtime and size: a timestamp-checked import takes it for calc/__init__.py's own
FORGE = ("import importlib._bootstrap_external as b, importlib.util, sys; src, pristine, out = sys.argv[1:4]; "
         "st = __import__('os').stat(pristine); code = compile(open(src).read(), pristine, 'exec'); "
         "open(out, 'wb').write(b._code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size)); "
         "print(importlib.util.cache_from_source('calc/__init__.py'))")


def test_written_byte_code_names_pycache_dirs_pyc_files_and_links(tmp_path):
    upper = tmp_path / "upper"
    (upper / "pkg" / "__pycache__").mkdir(parents=True)
    (upper / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"x")
    (upper / "pkg" / "mod.py").write_text("x = 1\n")
    (upper / "pkg" / "legacy.pyc").write_bytes(b"x")
    (upper / "deep" / "er").mkdir(parents=True)
    (upper / "deep" / "er" / "o.pyo").write_bytes(b"x")
    os.symlink("/elsewhere", upper / "linked.pyc")
    os.symlink("/elsewhere", upper / "deep" / "__pycache__")
    assert written_byte_code(upper) == ["deep/__pycache__", "deep/er/o.pyo", "linked.pyc", "pkg/__pycache__",
                                        "pkg/legacy.pyc"]
    assert written_byte_code(tmp_path / "empty-or-missing") == []


def test_byte_code_in_a_diff_never_reaches_the_run_and_the_gold_patch_resolves(tmp_path):
    task = calc_task(tmp_path)
    store = RepoStore(tmp_path / "repos", tmp_path / "cache")

    async def main():  # type: ignore[no-untyped-def]
        async with SessionHost() as host:
            grader = RepoGrader(host, store, env_cache=default_cache_dir())
            snapshot, env = await grader._built(task)  # not compiled: a .pyc the diff adds is a new file
            work = tmp_path / uuid.uuid4().hex
            git("clone", "-q", str(snapshot), str(work))
            (work / "fixed.py").write_text(CALC_FIX["calc/__init__.py"])
            rel = subprocess.run([str(env / "bin" / "python"), "-c", FORGE, str(work / "fixed.py"),
                                  str(snapshot / "calc" / "__init__.py"), str(work / "forged.pyc")],
                                 capture_output=True, text=True, check=True).stdout.strip()
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / "forged.pyc").rename(work / rel)
            (work / "fixed.py").unlink()
            git("add", "-f", rel, cwd=work)
            forged = git("diff", "--cached", "--binary", "--no-color", "HEAD", cwd=work)
            assert "GIT binary patch" in forged and "__pycache__" in forged
            return await grader.grade_many([(task, forged), (task, task.gold_patch)])

    forged, gold = asyncio.run(main())
    assert (gold.status, gold.reward, gold.findings) == ("resolved", 1.0, []), gold
    assert forged.status == "unresolved" and forged.reward == 0.0, forged  # calc's own add ran: still wrong
    assert forged.fail_to_pass == {"tests/test_calc.py::test_add": "FAILED"}, forged
