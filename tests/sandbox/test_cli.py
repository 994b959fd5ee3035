"""`coderl sandbox doctor|run` as a user runs them: a real subprocess, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coderl.sandbox import doctor
from coderl.sandbox.runtime_env import runtime_prefix


def coderl(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coderl.cli", *args], capture_output=True, text=True,
                          timeout=300, **kwargs)


# slow (CI runs it): the doctor runs a program in every language to report on them (72 s of the default
# suite at load ~25); the default suite shows the same isolation by attacking it (tests/sandbox/test_threats.py)
# and runs every language (tests/sandbox/test_languages.py). Issue 46: the default suite under 15 minutes.
@pytest.mark.slow
def test_doctor_reports_full_isolation():
    done = coderl("sandbox", "doctor", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    for name in ("unprivileged uid 65534", "no capabilities", "seccomp filter active", "ptrace denied",
                 "network: loopback of its own namespace only", "system files read-only", "language python"):
        assert checks[name]["ok"], checks[name]
    for language in ("ruby", "perl", "lua"):  # MultiPL-E's test libraries, where the language is installed
        if f"language {language}" in checks and checks[f"language {language}"]["ok"]:
            assert checks[f"libraries {language}"]["ok"], checks[f"libraries {language}"]
    runtime = checks["runtime environment"]
    if runtime_prefix() is not None:  # imported in a real slot: Python's packages and node's lodash
        assert runtime["ok"] and "numpy" in runtime["detail"] and "lodash" in runtime["detail"], runtime


def test_doctor_skips_a_missing_runtime_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CODERL_RUNTIME_PREFIX", str(tmp_path))
    runtime_prefix.cache_clear()
    try:
        found = doctor.runtime_missing()
    finally:
        runtime_prefix.cache_clear()
    assert found is not None and not found.ok, found
    assert found.detail.startswith("skipped: not built") and "build_runtime.sh" in found.detail
    assert doctor.essential_ok([found])


def test_run_prints_output_and_record(tmp_path):
    src = tmp_path / "a.py"
    src.write_text("print(input()[::-1])")
    stdin = tmp_path / "in.txt"
    stdin.write_text("abc\n")
    done = coderl("sandbox", "run", str(src), "-l", "python", "--stdin", str(stdin))
    assert done.returncode == 0 and done.stdout == "cba\n"
    record = json.loads(done.stderr.strip().splitlines()[-1])
    assert record["status"] == "ok" and record["isolation"] == "bwrap"


def test_bad_input_is_one_line_error(tmp_path):
    src = tmp_path / "a.cob"
    src.write_text("x")
    done = coderl("sandbox", "run", str(src), "-l", "cobol")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "unknown language 'cobol'" in done.stderr
    done = coderl("sandbox", "run", str(tmp_path / "missing.py"), "-l", "python")
    assert done.returncode == 2 and "Traceback" not in done.stderr
