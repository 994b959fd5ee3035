"""Agreement with SWE-bench's own harness (issue 34 item 4): for every instance the gate kept, gold
and empty, the per-test statuses our grader gave (``gate.jsonl``) against SWE-bench's log parser
for that repository run on a plain log of the same tests in the same environment.

The plain run is what SWE-bench's harness runs, in a session sandbox with the task's environment
(the same interpreter, packages and ``/repo``), none of our launcher or reporter: ``pytest -rA``
of the test files (``python -m pytest -rA -p no:cacheprovider``) and, for sympy, its own runner
as SWE-bench's spec has it (``bin/test -C --verbose``). The parser is the ``swebench`` package's
(``MAP_REPO_TO_PARSER``), imported in a separate virtualenv (``--swebench-python``; made with
uv when not given: ``swebench==4.0.4`` and its dependencies), never copied into coderl. SWE-bench's
keys are its parser's: a pytest id cut at its first space, a bare sympy name.

Compared per test: pass/fail (SWE-bench counts PASSED and XFAIL as passing, coderl PASSED, XPASS
and XFAIL of a marked test) and the exact label; every difference is listed.

    python benchmarks/swe_agreement.py --gate OUT/gate --repos ../shared/data/swe-bench-lite/repos \
        --cache CACHE --out OUT/agreement.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import subprocess
import sys
from pathlib import Path

from coderl.sandbox.session import SessionHost
from coderl.swe.environment import build_env, uv_binary
from coderl.swe.grading_run import test_files
from coderl.swe.store import RepoStore
from coderl.swe.task import RepoTask

SWEBENCH = "swebench==4.0.4"
SYMPY_CMD = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"
PYTEST_CMD = "python -m pytest -rA -p no:cacheprovider"
_STATUS_LINE = r"^(\x1b\[[0-9;]*m)*(PASSED|FAILED|ERROR|SKIPPED|XFAIL)|(PASSED|FAILED|ERROR|SKIPPED|XFAIL)(\x1b\[[0-9;]*m)*\s*$"
_PARSE = """
import json, sys
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
job = json.load(sys.stdin)
print(json.dumps(MAP_REPO_TO_PARSER[job["repo"]](job["log"], None)))
"""


def swebench_python(cache: Path) -> str:
    """A virtualenv with the swebench package (its parsers import its harness), made once."""
    venv = cache / "swebench-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([uv_binary(), "venv", "-q", "--python", sys.executable, str(venv)], check=True)
        subprocess.run([uv_binary(), "pip", "install", "-q", "--python", str(python), SWEBENCH], check=True)
    return str(python)


def their_key(repo: str, test: str) -> str:
    return test.split("::", 1)[1] if repo == "sympy/sympy" else test.split()[0]


def passing_ours(status: str) -> bool:
    return status in ("PASSED", "XPASS", "XFAIL")


def passing_theirs(status: str) -> bool:
    return status in ("PASSED", "XFAIL")


async def plain_log(host: SessionHost, store: RepoStore, task: RepoTask, env: Path, patch: str) -> str:
    session = await host.open(store.snapshot(task.repo, task.base_commit), env_dir=env)
    try:
        steps = []
        if patch.strip():
            await session.write_file("/tmp/fix.patch", patch.encode())
            steps.append("git apply /tmp/fix.patch")
        await session.write_file("/tmp/test.patch", task.test_patch.encode())
        steps.append("git apply /tmp/test.patch")
        files = " ".join(shlex.quote(f) for f in test_files(task))
        command = SYMPY_CMD if task.repo == "sympy/sympy" else PYTEST_CMD
        # pytest's log less what no pytest parser reads: -rA prints every passing test's captured
        # output (sqlfluff's debug logging: megabytes, past the session's output limit); the
        # parsers read only lines that begin or end with a status word
        keep = "" if task.repo == "sympy/sympy" else f" | grep -aE '{_STATUS_LINE}'"
        run = await session.exec(" && ".join(steps) + f" && {command} {files} 2>&1{keep}", timeout_s=900)
        return run.stdout
    finally:
        await session.close()


def parse(python: str, repo: str, log: str) -> dict[str, str]:
    proc = subprocess.run([python, "-c", _PARSE], input=json.dumps({"repo": repo, "log": log}), capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout)


def compare(repo: str, tests: list[str], ours: dict[str, str], theirs: dict[str, str]) -> dict:
    diffs, label_diffs = [], []
    for test in tests:
        mine, key = ours.get(test, "missing"), their_key(repo, test)
        other = theirs.get(key, "missing")
        if passing_ours(mine) != passing_theirs(other):
            diffs.append({"test": test, "coderl": mine, "swebench": other})
        elif mine != other:
            label_diffs.append({"test": test, "coderl": mine, "swebench": other})
    return {"tests": len(tests), "agree": len(tests) - len(diffs), "pass_fail_differences": diffs,
            "label_differences": label_diffs}


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gate", required=True, help="a `coderl eval swe-gate` output directory")
    ap.add_argument("--repos", required=True)
    ap.add_argument("--cache", required=True, help="the cache the gate ran with")
    ap.add_argument("--out", required=True)
    ap.add_argument("--swebench-python", help="a Python with swebench installed (default: made in --cache)")
    ap.add_argument("--instances", nargs="+")
    args = ap.parse_args()
    gate, cache = Path(args.gate), Path(args.cache)
    records = {json.loads(line)["instance_id"]: json.loads(line) for line in (gate / "gate.jsonl").read_text().splitlines()}
    rows = [json.loads(line) for line in (gate / "tasks.jsonl").read_text().splitlines()]
    rows = [r for r in rows if not args.instances or r["instance_id"] in args.instances]
    python = args.swebench_python or swebench_python(cache)
    store = RepoStore(Path(args.repos).resolve(), cache)
    report = {}
    async with SessionHost() as host:
        for row in rows:
            task = RepoTask.from_row(row)
            env = build_env(task.env, cache)
            rec = records[task.instance_id]
            report[task.instance_id] = {}
            for name, patch in (("gold", task.gold_patch), ("empty", "")):
                log = await plain_log(host, store, task, env, patch)
                theirs = parse(python, task.repo, log)
                result = compare(task.repo, list(task.tests), rec[f"{name}_tests"], theirs)
                report[task.instance_id][name] = result
                print(f"{task.instance_id} {name}: {result['agree']}/{result['tests']} agree, "
                      f"{len(result['label_differences'])} label differences", flush=True)
    total = sum(r[n]["tests"] for r in report.values() for n in r)
    agree = sum(r[n]["agree"] for r in report.values() for n in r)
    summary = {"instances": len(report), "runs": 2 * len(report), "tests": total, "agree": agree,
               "agreement": agree / total if total else None}
    Path(args.out).write_text(json.dumps({"summary": summary, "instances": report}, indent=2))
    print(json.dumps(summary))
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
