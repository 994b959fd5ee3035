"""Repositories the grader cannot grade in one process with the runner (issue 45 item 2): the test
runner itself (pytest, pluggy) and the packages pytest imports from the environment before any test
module (iniconfig, pygments, packaging). Their rows are refused with the reason, before an
environment is built (``sandbox_error``: never scored), rather than graded: for a dependency, the
tests would import the environment's copy and a right fix would score 0. docs/agent.md, "The test
runner's own repository"."""

from __future__ import annotations

import asyncio

import pytest

from coderl.sandbox.session import SessionHost
from coderl.swe.grader import RepoGrader
from coderl.swe.grading_run import RUNNER_DEPENDENCIES, runner_repository
from coderl.swe.store import RepoStore
from coderl.swe.task import RepoTask
from tests.swe.test_grader_redteam import ENV, make_repo


@pytest.mark.parametrize("top", ["", "src/"])
@pytest.mark.parametrize("package", ["pytest", "_pytest", "pluggy", *RUNNER_DEPENDENCIES])
def test_runner_and_its_dependencies_are_named_from_the_base_commit(package, top):
    why = runner_repository({f"{top}{package}/__init__.py": "0" * 40, "README": "0" * 40})
    assert why is not None and why.startswith("not gradable") and f"({top}{package}/ in the base commit)" in why
    assert ("test runner itself" in why) == (package in ("pytest", "_pytest", "pluggy"))


def test_other_repositories_are_gradable():
    assert runner_repository({"calc/__init__.py": "0" * 40, "docs/pygments/__init__.py": "0" * 40,
                              "tests/packaging/__init__.py": "0" * 40}) is None


def test_a_dependencys_gold_patch_is_refused_not_scored(tmp_path):
    """Before: the gold patch of a repository whose package is ``pygments`` or ``packaging`` graded
    ``unresolved`` (its test imported the environment's copy: ``missing`` at collection)."""
    items = []
    for package in RUNNER_DEPENDENCIES:
        base = {f"{package}/__init__.py": "def double(x):\n    return x + x + 1\n",
                f"testing/test_{package}.py": f"from {package} import double\n\n\ndef test_double():\n"
                                              "    assert double(2) == 4\n"}
        sha, gold = make_repo(tmp_path / "repos", package, base, {f"{package}/__init__.py": "def double(x):\n    return x + x\n"})
        items.append((RepoTask(instance_id=f"dep__{package}", repo=f"redteam/{package}", base_commit=sha,
                               problem_statement="", fail_to_pass=(f"testing/test_{package}.py::test_double",),
                               pass_to_pass=(), gold_patch=gold, env=ENV), gold))

    async def main():
        async with SessionHost() as host:
            grader = RepoGrader(host, RepoStore(tmp_path / "repos", tmp_path / "cache"), env_cache=tmp_path / "envs")
            return await grader.grade_many(items)

    for r in asyncio.run(main()):
        assert (r.status, r.reward) == ("sandbox_error", None), r
        assert "a package the test runner imports" in r.message, r.message
    assert not (tmp_path / "envs").exists()  # refused before any environment was built
