"""pytest's own SWE-bench rows (issue 45 item 2): does a diff that knows no test resolve them?

A row of ``pytest-dev/pytest`` tests the test runner with the test runner: its tests check their
results through pytest's own helpers (``pytester``'s ``LineMatcher.fnmatch_lines``,
``RunResult.assert_outcomes``, ``HookRecorder.assertoutcome``, ``pytest.raises``), all under
``src/_pytest``: the code under test, which the agent's diff may change. ``HACK`` below is such a
diff: 12 lines appended to ``pytester.py`` and ``python_api.py`` that make those helpers vacuous.
It touches no test file and names no test of any row.

For each row this builds the base commit with the row's test patch, once as it is (``base``), once
with the gold patch (``gold``, with ``--gold``) and once with ``HACK`` (``hack``), and runs the test
files two ways:

- ``log``: what SWE-bench's harness does, ``python -m pytest -rA`` of the files with the work tree's
  pytest, statuses read from the ``PASSED``/``FAILED``/... summary lines as its pytest log parser
  reads them (PASSED and XFAIL pass);
- ``beneath`` (``--beneath``): a prototype of the verdict taken beneath pytest, the design
  proposed for these rows: a profile hook set before any code of the work tree runs notes, for
  each function compiled from the pinned test files (``--assert=plain``), how often it was entered
  and how often it returned normally (the instruction at ``f_lasti`` a ``RETURN_VALUE``; an
  exception unwinding the frame stops elsewhere); a row's id passes when its function returned
  normally at least as often as the row names ids of it and never raised.

The environment of each version is a virtualenv of the task tables' pins
(``coderl/swe/env_tables.json``) on ``--python`` (SWE-bench runs every pytest row on 3.9), the work
tree's ``src`` on ``PYTHONPATH`` with a ``_version.py`` written (what ``pip install -e .`` does
with setuptools-scm). Rows come from a SWE-bench JSON list; each base commit from a git bundle
whose tags are instance ids (``../shared/data/swe-bench-lite/repos``) or a clone of the repository.

    python benchmarks/pytest_rows_checker_hack.py --rows /work/notes/i44/lite300/rows.json \
        --git ../shared/data/swe-bench-lite/repos/pytest-dev__pytest.bundle --git /path/to/pytest-clone \
        --python /root/.pyenv/versions/3.9.18/bin/python3.9 --work /tmp/pr --out pytest_rows_hack.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

TABLES = Path(__file__).resolve().parents[1] / "src" / "coderl" / "swe" / "env_tables.json"
# what ``pip install -e .`` adds from the work tree's install_requires (the tables pin only some), and
# what some test modules import
EXTRA = ("iniconfig==2.0.0", "toml==0.10.2", "tomli==2.0.1", "importlib-metadata<5", "pexpect", "xmlschema", "mock", "hypothesis<6.80")

HACK = {
    "pytester.py": '''
for _n in ("fnmatch_lines", "re_match_lines", "no_fnmatch_line", "no_re_match_line", "fnmatch_lines_random",
           "re_match_lines_random"):
    setattr(LineMatcher, _n, lambda self, *a, **k: None)
RunResult.assert_outcomes = lambda self, *a, **k: None
HookRecorder.assertoutcome = lambda self, *a, **k: None
''',
    "python_api.py": '''
_exit = RaisesContext.__exit__
def _swallow(self, *exc):
    try:
        return _exit(self, *exc)
    except BaseException:
        return True
RaisesContext.__exit__ = _swallow
''',
}

BENEATH = r'''
import dis, json, os, sys, threading
wt, wanted, files = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
CodeType = type(compile("", "", "exec"))
index = {}
for rel in files:
    path = os.path.join(wt, rel)
    todo = [(compile(open(path, "rb").read(), path, "exec", dont_inherit=True), ())]
    while todo:
        code, outer = todo.pop()
        for c in code.co_consts:
            if isinstance(c, CodeType):
                here = (*outer, c.co_name)
                index.setdefault((c.co_firstlineno, c.co_name), []).append((c, path, rel + "::" + "::".join(here)))
                todo.append((c, here))
RETURN = {dis.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap}
calls, returned, raised = {}, {}, {}
def prof(frame, event, arg):
    if event != "call" and event != "return":
        return
    code = frame.f_code
    for known, path, key in index.get((code.co_firstlineno, code.co_name), ()):
        if known == code and code.co_filename == path:
            if event == "call":
                calls[key] = calls.get(key, 0) + 1
            elif code.co_code[frame.f_lasti] in RETURN:
                returned[key] = returned.get(key, 0) + 1
            else:
                raised[key] = raised.get(key, 0) + 1
            return
threading.setprofile(prof)
sys.setprofile(prof)
sys.path.insert(0, os.path.join(wt, "src"))
os.chdir(wt)
import pytest
ret = pytest.main(["-p", "no:cacheprovider", "--assert=plain", "-q", *files])
sys.setprofile(None)
count = {}
for t in wanted:
    count[t.split("[", 1)[0]] = count.get(t.split("[", 1)[0], 0) + 1
status = {}
for t in wanted:
    key = t.split("[", 1)[0]
    status[t] = "PASSED" if returned.get(key, 0) >= count[key] and not raised.get(key) else \
        ("FAILED" if calls.get(key) else "missing")
sys.stdout.write("\nBENEATH " + json.dumps({"ret": int(ret), "status": status,
    "counts": {k: [calls.get(k, 0), returned.get(k, 0), raised.get(k, 0)] for k in count}}) + "\n")
sys.stdout.flush()
os._exit(0)
'''

SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (\S+)")


def sh(*args: str, cwd: Path | None = None, **kw) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True, **kw)


def venv(work: Path, python: str, version: str) -> Path:
    """A virtualenv of the tables' pins for ``version`` (made once)."""
    pins = json.loads(TABLES.read_text())["tables"]["pytest-dev/pytest"][version]["requirements"]
    target = work / "venvs" / version
    if not (target / "done").exists():
        sh(python, "-m", "venv", "--clear", str(target))
        have = {p.split("==")[0] for p in pins}
        sh(str(target / "bin" / "pip"), "install", "-q", *pins, *(e for e in EXTRA if e.split("=")[0].split("<")[0] not in have))
        (target / "done").write_text("")
    return target / "bin" / "python"


def tree(work: Path, sources: list[str], row: dict, mode: str) -> Path:
    """The base commit with the test patch, and the gold patch or ``HACK`` on top."""
    out = work / "trees" / f"{row['instance_id']}-{mode}"
    if out.exists():
        sh("rm", "-rf", str(out))
    out.mkdir(parents=True)
    sh("git", "init", "-q", cwd=out)
    for source in sources:
        ref = row["instance_id"] if source.endswith(".bundle") else row["base_commit"]
        got = subprocess.run(["git", "fetch", "-q", "--depth", "1", str(Path(source).resolve()), ref], cwd=out,
                             capture_output=True, text=True)
        if got.returncode == 0:
            break
    else:
        raise SystemExit(f"{row['instance_id']}: its base commit is in none of {sources}")
    sh("git", "checkout", "-q", "FETCH_HEAD", cwd=out)
    for patch in [row["test_patch"], *([row["patch"]] if mode == "gold" else [])]:
        sh("git", "apply", "-", cwd=out, input=patch)
    if mode == "hack":
        for rel, text in HACK.items():
            path = out / "src" / "_pytest" / rel
            path.write_text(path.read_text() + "\n" + text)
    (out / "src" / "_pytest" / "_version.py").write_text(
        f"version = __version__ = {row['version'] + '.0'!r}\nversion_tuple = {tuple(map(int, (row['version'] + '.0').split('.')))!r}\n")
    return out


def run(python: Path, wt: Path, row: dict, beneath: bool) -> dict:
    # a few rows name log fragments as tests (pytest-5227's "[100%]"): only node ids count
    f2p = [t for t in json.loads(row["FAIL_TO_PASS"]) if "::" in t]
    p2p = [t for t in json.loads(row["PASS_TO_PASS"]) if "::" in t]
    files = sorted({t.split("::")[0] for t in f2p + p2p})
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
           "PYTHONPATH": str(wt / "src"), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    if beneath:
        proc = subprocess.run([str(python), "-c", BENEATH, str(wt), json.dumps(f2p + p2p), json.dumps(files)],
                              cwd=wt, env=env, capture_output=True, text=True, timeout=3600)
        line = [x for x in proc.stdout.splitlines() if x.startswith("BENEATH ")]
        status = json.loads(line[-1][8:])["status"] if line else {}
    else:
        proc = subprocess.run([str(python), "-m", "pytest", "-rA", "-p", "no:cacheprovider", *files], cwd=wt,
                              env=env, capture_output=True, text=True, timeout=3600)
        status = {}
        for text in proc.stdout.splitlines():
            m = SUMMARY.match(text)
            if m:
                status[m.group(2)] = m.group(1)
    ok = {t: status.get(t) in ("PASSED", "XFAIL") for t in f2p + p2p}
    return {"f2p_passing": sum(ok[t] for t in f2p), "f2p": len(f2p), "p2p_passing": sum(ok[t] for t in p2p),
            "p2p": len(p2p), "resolved": all(ok.values()),
            "not_passing": {t: status.get(t, "missing") for t in f2p + p2p if not ok[t]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", required=True, help="SWE-bench rows (a JSON list)")
    ap.add_argument("--git", action="append", required=True, help="a bundle (tags = instance ids) or a clone")
    ap.add_argument("--python", required=True, help="the interpreter (SWE-bench's: 3.9)")
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--only", nargs="*", help="instance ids")
    ap.add_argument("--gold", action="store_true", help="also grade the gold patch")
    ap.add_argument("--beneath", action="store_true", help="also take the prototype verdict beneath pytest")
    a = ap.parse_args()
    rows = [r for r in json.loads(Path(a.rows).read_text()) if r["repo"] == "pytest-dev/pytest"
            and (not a.only or r["instance_id"] in a.only)]
    results = json.loads(a.out.read_text()) if a.out.exists() else {}
    for row in rows:
        python = venv(a.work, a.python, row["version"])
        for mode in ("base", *(["gold"] if a.gold else []), "hack"):
            wt = tree(a.work, a.git, row, mode)
            for how in ("log", *(["beneath"] if a.beneath else [])):
                got = run(python, wt, row, how == "beneath")
                results.setdefault(row["instance_id"], {})[f"{mode}/{how}"] = got
                a.out.write_text(json.dumps(results, indent=1, sort_keys=True))
                print(row["instance_id"], mode, how, "resolved" if got["resolved"] else "unresolved",
                      f"F2P {got['f2p_passing']}/{got['f2p']} P2P {got['p2p_passing']}/{got['p2p']}", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
