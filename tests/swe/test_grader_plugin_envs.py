"""Honest environments stay honest (issue 43 item 2): task environments carrying the popular pytest
plugins, each at a current and an older version. In each, a repository whose tests use what the
plugins give (hypothesis' ``@given``, pytest-mock's ``mocker``, an asyncio test, an anyio test,
pytest-benchmark's ``benchmark``, syrupy's ``snapshot``, pytest-subtests' ``subtests``) resolves with
its gold patch and not with an empty one, and every attack of the red team
(tests/swe/test_grader_redteam.py) fails with its status there too. Before issue 43 every run in
an environment with hypothesis >= 6.43 was ``tampered``: its plugin replaces pytest's
``FixtureFunctionMarker.__call__`` as it loads, which the reporter now takes as the environment's
(the new function's code is the environment's own, and the change is made before any conftest).

Tiers: gold and empty in both environments under ``slow`` (CI: two gradings each, plus building the
two environments once, pip from the index, cached like any task environment); the red team in both
under ``heavy`` (some 80 gradings per environment).
"""

from __future__ import annotations

import dataclasses

import pytest

from coderl.swe.task import EnvSpec, RepoTask
from tests.swe.test_grader_redteam import (
    ATTACKS,
    assert_attack_fails,
    assert_golds_resolve,
    grade_all,
    graded_redteam,
    make_repo,
)

PLUGINS = ("hypothesis", "pytest-xdist", "pytest-asyncio", "anyio", "pytest-cov", "pytest-mock", "pytest-timeout",
           "pytest-randomly", "pytest-rerunfailures", "pytest-benchmark", "syrupy", "pytest-subtests")
ENVS = {
    "current": ("pytest", *PLUGINS),
    "older": ("pytest==7.4.4", "hypothesis==6.50.1", "pytest-xdist==3.3.1", "pytest-asyncio==0.21.1", "anyio==3.7.1",
              "pytest-cov==4.1.0", "pytest-mock==3.11.1", "pytest-timeout==2.1.0", "pytest-randomly==3.12.0",
              "pytest-rerunfailures==12.0", "pytest-benchmark==4.0.0", "syrupy==4.0.8", "pytest-subtests==0.11.0"),
}
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

PLUGGED = {
    "pyproject.toml": '[tool.pytest.ini_options]\nasyncio_mode = "strict"\n',
    "plugged/__init__.py": "def add(a, b):\n    return a - b\n\n\nasync def aadd(a, b):\n    return a + b\n\n\n"
                           "def greet(name):\n    return f'hello {name}'\n",
    "tests/test_plugged.py": (
        "import pytest\nfrom hypothesis import given, settings, strategies as st\n\nimport plugged\n\n\n"
        "def test_add():\n    assert plugged.add(2, 3) == 5\n\n\n"
        "@settings(max_examples=20, deadline=None)\n@given(st.integers(), st.integers())\n"
        "def test_add_commutes(a, b):\n    assert plugged.aadd is not None and a + b == b + a\n\n\n"
        "def test_mocker(mocker):\n    mocker.patch.object(plugged, 'greet', return_value='hi')\n"
        "    assert plugged.greet('x') == 'hi'\n\n\n"
        "@pytest.mark.asyncio\nasync def test_asyncio():\n    assert await plugged.aadd(1, 2) == 3\n\n\n"
        "@pytest.mark.anyio\nasync def test_anyio():\n    assert await plugged.aadd(2, 2) == 4\n\n\n"
        "@pytest.fixture\ndef anyio_backend():\n    return 'asyncio'\n\n\n"
        "def test_benchmark(benchmark):\n    assert benchmark(plugged.greet, 'b') == 'hello b'\n\n\n"
        "def test_snapshot(snapshot):\n    assert plugged.greet('s') == snapshot\n\n\n"
        "def test_subtests(subtests):\n    for i in range(2):\n        with subtests.test(i=i):\n"
        "            assert plugged.greet(str(i)).startswith('hello')\n"),
    "tests/__snapshots__/test_plugged.ambr": "# serializer version: 1\n# name: test_snapshot\n  'hello s'\n# ---\n",
}
PLUGGED_FIX = {"plugged/__init__.py": PLUGGED["plugged/__init__.py"].replace("return a - b", "return a + b")}
PASSING = ("test_add_commutes", "test_mocker", "test_asyncio", "test_anyio", "test_benchmark", "test_snapshot",
           "test_subtests")


@pytest.fixture(scope="module", params=list(ENVS))
def plugin_env(request) -> EnvSpec:
    return EnvSpec(requirements=ENVS[request.param])


def test_gold_resolves_and_empty_does_not(plugin_env, tmp_path):
    sha, gold = make_repo(tmp_path / "repos", "plugged", PLUGGED, PLUGGED_FIX)
    f = "tests/test_plugged.py"
    task = RepoTask(instance_id="redteam__plugged-1", repo="redteam/plugged", base_commit=sha, problem_statement="",
                    fail_to_pass=(f"{f}::test_add",), pass_to_pass=tuple(f"{f}::{t}" for t in PASSING),
                    gold_patch=gold, test_files=(f, "tests/__snapshots__/test_plugged.ambr"), env=plugin_env)
    gold_result, empty = grade_all(tmp_path, [(task, gold), (task, "")])
    assert_golds_resolve([gold_result])
    assert (empty.status, empty.reward) == ("unresolved", 0.0), empty
    assert empty.fail_to_pass == {f"{f}::test_add": "FAILED"}, empty
    assert set(empty.pass_to_pass.values()) == {"PASSED"}, empty


@pytest.fixture(scope="module")
def redteam(plugin_env, tmp_path_factory):
    return graded_redteam(tmp_path_factory.mktemp("redteam"), plugin_env)


@pytest.mark.heavy
def test_calc_gold_resolves(redteam):
    assert_golds_resolve(redteam[0])


# unregistered before pytest configures its plugins, the reporter never sees pytest-subtests (on pytest
# 9) set TestCaseFunction.addSubTest and delete it again at the end: that change is a finding too
ALSO_TAMPERED = frozenset({"reporter-unregistered"})


@pytest.mark.heavy
@pytest.mark.parametrize("attack", ATTACKS, ids=[a.id for a in ATTACKS])
def test_attack_is_not_resolved(redteam, attack):
    result = redteam[1][attack.id]
    if attack.id in ALSO_TAMPERED and result.status == "tampered":
        attack = dataclasses.replace(attack, expected="tampered")
    assert_attack_fails(result, attack)


def test_a_project_whose_warnings_are_errors_runs_with_its_environments_plugins(plugin_env, tmp_path):
    """The environment's plugins are named with ``-p`` (autoload is off), so pytest-xdist's
    ``xdist.looponfail`` imports ``xdist.plugin`` before pytest can mark it for assertion rewriting.
    pytest warns; under a project's ``filterwarnings = error`` (astropy) that warning failed every
    run before any test (exit 70, the gold patch unresolved): the launcher ignores that one warning."""
    # errors but for the plugins' own deprecations and unknown-option notes (a config-time warning
    # each, in one environment or the other)
    errors = 'filterwarnings = ["error", "ignore::DeprecationWarning", "ignore::pytest.PytestConfigWarning"]\n'
    base = {**PLUGGED, "pyproject.toml": PLUGGED["pyproject.toml"] + errors}
    sha, gold = make_repo(tmp_path / "repos", "plugged", base, PLUGGED_FIX)
    f = "tests/test_plugged.py"
    task = RepoTask(instance_id="redteam__plugged-2", repo="redteam/plugged", base_commit=sha, problem_statement="",
                    fail_to_pass=(f"{f}::test_add",), pass_to_pass=(f"{f}::test_mocker",), gold_patch=gold,
                    test_files=(f, "tests/__snapshots__/test_plugged.ambr"), env=plugin_env)
    [gold_result] = grade_all(tmp_path, [(task, gold)])
    assert_golds_resolve([gold_result])
