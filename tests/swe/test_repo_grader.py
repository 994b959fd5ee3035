"""The repository grader on the real sandbox, over coderl's own task set: the gold patch scores 1,
an empty patch 0, a patch that edits the tests 0, one that breaks a PASS_TO_PASS test 0; apply
failures and infrastructure failures are kept apart."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from coderl.cache import default_cache_dir
from coderl.sandbox.session import SessionHost
from coderl.swe.environment import build_env
from coderl.swe.grader import RepoGrader
from coderl.swe.store import RepoStore
from coderl.swe.task import EnvSpec
from coderl.swe.task_set import build_task_set


@pytest.fixture(scope="module")
def task_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe")
    tasks = {t.instance_id.split("__")[1].rsplit("-", 1)[0]: t for t in build_task_set(root)}
    return root, tasks


def grade(task_set, items, **kw):
    root, _ = task_set

    async def main():
        async with SessionHost() as host:
            grader = RepoGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir(), **kw)
            return await grader.grade_many(items)

    return asyncio.run(main())


def _diff_of(task_set, task, edits: dict[str, tuple[str, str]]) -> str:
    """The diff an agent makes by str_replace edits in a real session."""
    root, _ = task_set

    async def main():
        async with SessionHost() as host:
            snapshot = RepoStore(root / "repos", root / "cache").snapshot(task.repo, task.base_commit)
            async with await host.open(snapshot) as s:
                for path, (old, new) in edits.items():
                    await s.str_replace(path, old, new)
                return await s.finish()

    return asyncio.run(main())


def test_gold_resolves_and_empty_does_not_for_every_task(task_set):
    _, tasks = task_set
    assert len(tasks) >= 5
    results = grade(task_set, [(t, t.gold_patch) for t in tasks.values()] + [(t, "") for t in tasks.values()])
    n = len(tasks)
    for r in results[:n]:
        assert (r.status, r.reward) == ("resolved", 1.0), r
        assert set(r.fail_to_pass.values()) == {"PASSED"}
    for r in results[n:]:
        assert (r.status, r.reward) == ("unresolved", 0.0), r
        assert "FAILED" in r.fail_to_pass.values() and set(r.pass_to_pass.values()) == {"PASSED"}


def test_test_edits_are_restored(task_set):
    _, tasks = task_set
    t = tasks["intervals"]
    cheat = _diff_of(task_set, t, {"tests/test_intervals.py": ("== [(1, 3)]", "== [(1, 2), (2, 3)]")})
    conftest = ("diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n"
                "@@ -0,0 +1,2 @@\n+import pytest\n+pytest.skip('all', allow_module_level=True)\n")
    cheat_and_fix = t.gold_patch + cheat
    r_cheat, r_conftest, r_both = grade(task_set, [(t, cheat), (t, conftest), (t, cheat_and_fix)])
    assert (r_cheat.status, r_cheat.reward, r_cheat.tests_touched) == ("unresolved", 0.0, ["tests/test_intervals.py"])
    assert (r_conftest.status, r_conftest.tests_touched) == ("unresolved", ["conftest.py"])
    assert (r_both.status, r_both.reward) == ("resolved", 1.0)  # the fix counts, the test edit does not


def test_breaking_a_pass_to_pass_test_scores_zero(task_set):
    _, tasks = task_set
    t = tasks["roman"]
    fix_but_break = _diff_of(task_set, t, {"roman.py": ('    return sum(VALUES[ch] for ch in text)',
                                                        '    total = 0\n'
                                                        '    for ch, nxt in zip(text, text[1:] + " "):\n'
                                                        '        v = VALUES[ch]\n'
                                                        '        total += -v if nxt in VALUES and VALUES[nxt] > v else v\n'
                                                        '    return total if total < 1000 else 0')})
    (r,) = grade(task_set, [(t, fix_but_break)])
    assert r.status == "unresolved" and r.fail_to_pass["tests/test_roman.py::test_subtractive"] == "PASSED"
    assert r.pass_to_pass["tests/test_roman.py::test_additive"] == "FAILED" and r.reward == 0.0


def test_apply_failures_are_the_agents_and_infrastructure_failures_are_not(task_set):
    _, tasks = task_set
    t = tasks["semver"]
    stale = t.gold_patch.replace("    return parts\n", "    return partz\n")
    # a link to the task's environment (bound into every grading sandbox at its host path), then a
    # file written through it: the environment every later episode and grade shares
    env = build_env(t.env, default_cache_dir())
    escape = (f"diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+{env}\n"
              "\\ No newline at end of file\n"
              "diff --git a/link/owned.pth b/link/owned.pth\nnew file mode 100644\n--- /dev/null\n+++ b/link/owned.pth\n"
              "@@ -0,0 +1 @@\n+owned\n")
    no_repo = dataclasses.replace(t, repo="nobody/nowhere")
    no_env = dataclasses.replace(t, env=EnvSpec(requirements=("coderl-no-such-package==0.0.1",)))
    malformed, stale_r, escape_r, repo_r = grade(task_set, [(t, "not a diff"), (t, stale), (t, escape),
                                                            (no_repo, t.gold_patch)])
    (env_r,) = grade(task_set, [(no_env, t.gold_patch)], find_links=Path("/nonexistent-wheelhouse"))
    assert (malformed.status, malformed.reward) == ("apply_failed", 0.0)
    assert (stale_r.status, stale_r.reward) == ("apply_failed", 0.0)
    assert escape_r.status == "apply_failed" and not (env / "owned.pth").exists(), escape_r
    assert (repo_r.status, repo_r.reward) == ("sandbox_error", None) and "nobody/nowhere" in repo_r.message
    assert (env_r.status, env_r.reward) == ("sandbox_error", None) and "coderl-no-such-package" in env_r.message


def test_local_episodes_grade_from_a_data_swe_row(task_set):
    from coderl.data.swe import swe_row
    from coderl.swe.episodes import LocalEpisodes
    from coderl.swe.task_ref import TaskRef

    root, tasks = task_set
    t = tasks["lru"]
    store = RepoStore(root / "repos", root / "cache")
    row = swe_row(t, store.snapshot(t.repo, t.base_commit), None, root / "repos", root / "cache")

    async def main():
        async with SessionHost() as host:
            episodes, ref = LocalEpisodes(host), TaskRef.from_extra_info(row["extra_info"])
            return await asyncio.gather(episodes.grade(ref, t.gold_patch), episodes.grade(ref, None),
                                        episodes.grade(TaskRef.from_extra_info({"instance_id": "x"}), t.gold_patch))

    gold, nothing, broken = asyncio.run(main())
    assert (gold.status, nothing.status, broken.status) == ("resolved", "unresolved", "sandbox_error")


def test_graded_code_cannot_write_the_environment_or_the_snapshot(task_set):
    """The agent's code runs with its tests: here a right fix whose module, on import, appends to a
    .pth file in the task's environment (bound into the sandbox at its host path, $VIRTUAL_ENV) and
    to its own file in the work tree. The grade stands, and neither write reaches what every later
    grade and episode start from: the shared environment and the pristine snapshot."""
    root, tasks = task_set
    t = tasks["semver"]
    payload = ("import os as _os\n"
               "for _path in (_os.path.join(_os.environ['VIRTUAL_ENV'], 'owned.pth'), __file__):\n"
               "    try:\n"
               "        with open(_path, 'a') as _f:\n"
               "            _f.write('# owned\\n')\n"
               "    except OSError:\n"
               "        pass\n")
    diff = _diff_of(task_set, t, {"semver.py": ("    return parts\n", "    return [int(p) for p in parts]\n\n\n" + payload)})
    (r,) = grade(task_set, [(t, diff)])
    assert (r.status, r.reward) == ("resolved", 1.0), r
    env = build_env(t.env, default_cache_dir())
    snapshot = RepoStore(root / "repos", root / "cache").snapshot(t.repo, t.base_commit)
    assert not (env / "owned.pth").exists()
    assert "owned" not in (snapshot / "semver.py").read_text() and "    return parts\n" in (snapshot / "semver.py").read_text()
