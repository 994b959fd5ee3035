from __future__ import annotations

from coderl.sandbox.languages.base import Language
from coderl.sandbox.pythonenv import sandbox_python
from coderl.sandbox.runtime_env import packages


class Pytest(Language):
    """SandboxFusion's ``pytest``: the program is a test module, run by the runtime environment's
    pytest (docker/runtime-python.txt) as ``pytest <file>``; pytest's exit status is the verdict
    (0 every test passed, 1 one failed, 5 none collected). No cache directory is written. Where the
    runtime has no pytest the language is not offered (never a failing program)."""

    name = "pytest"
    test_runner = True
    source_name = "test_main.py"
    run_argv = (sandbox_python(), "-m", "pytest", "-p", "no:cacheprovider", "{src}")
    version_argv = (sandbox_python(), "-m", "pytest", "--version")
    hello = ('def test_hello(capsys):\n    assert 1 + 1 == 2\n'
             '    with capsys.disabled():  # pytest shows no passing test\'s output\n'
             '        print("hello, coderl")\n')

    @classmethod
    def available(cls) -> bool:
        return super().available() and "pytest" in packages()["python"]

    @classmethod
    def version(cls) -> str:
        return f"pytest {packages()['python'].get('pytest', 'unknown')}"
