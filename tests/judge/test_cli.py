"""`coderl judge` as a user runs it: exit 0 accepted, 1 not accepted, 2 bad input in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = {"inputs": ["1 2\n", "3 4\n"], "outputs": ["3\n", "7\n"]}


def coderl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coderl.cli", "judge", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    (tmp_path / "tests.json").write_text(json.dumps(TESTS))
    (tmp_path / "good.py").write_text("a, b = map(int, input().split())\nprint(a + b)\n")
    (tmp_path / "bad.py").write_text("print(3)\n")
    (tmp_path / "response.md").write_text("Sure:\n```python\na, b = map(int, input().split())\nprint(a + b)\n```\n")
    (tmp_path / "broken.json").write_text('{"inputs": ["1"]}')
    return tmp_path


def test_verdicts_and_exit_codes(files: Path):
    good = coderl(str(files / "good.py"), "-t", str(files / "tests.json"))
    assert good.returncode == 0 and good.stdout.startswith("accepted (2/2 passed, python"), good.stderr
    bad = coderl(str(files / "bad.py"), "-t", str(files / "tests.json"), "--run-all", "--json")
    record = json.loads(bad.stdout)
    assert bad.returncode == 1 and record["verdict"] == "wrong_answer" and record["passed"] == 1
    response = coderl(str(files / "response.md"), "-t", str(files / "tests.json"), "--response")
    assert response.returncode == 0, response.stdout + response.stderr


@pytest.mark.parametrize("args,message", [
    (["good.py", "-t", "broken.json"], "unrecognised test format"),
    (["good.py", "-t", "tests.json", "-l", "cobol"], "unknown language 'cobol'"),
    (["tests.json", "-t", "tests.json"], "pass --language"),
    (["missing.py", "-t", "tests.json"], "No such file"),
    (["good.py", "-t", "tests.json", "--cpu-s", "0"], "cpu_s must be a positive number"),
])
def test_bad_input_is_one_line_and_exit_2(files: Path, args: list[str], message: str):
    out = coderl(*[str(files / a) if a.endswith((".py", ".json")) else a for a in args])
    assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
