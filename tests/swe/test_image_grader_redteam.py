"""The red-team suite again, against the IMAGE grader (`coderl.swe.image_grader.ImageRepoGrader`): every
attack of tests/swe/test_grader_redteam.py on the same ``calc`` repository, here at /testbed of a
SWE-bench-shaped image built with podman (the image's own Python 3.11 and pytest 7.2.1, the repository
importable through a .pth, as SWE-bench's images have it). The image grader shares the launcher and
the verdicts with the repository grader but takes the diff's base, the protected files, the pinned
configuration and the test patch from the pristine image instead of a snapshot: each attack must
come out not resolved, reward 0, with the status it has there."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil

import pytest

from coderl.sandbox.session import SessionHost
from coderl.swe.image_grader import ImageRepoGrader
from coderl.swe.store import RepoStore
from tests.helpers.images import built_image, flask_wheels, swe_dockerfile
from tests.swe.test_grader_redteam import (
    ATTACKS,
    EXTRA,
    SUB,
    Attack,
    _with_add,
    assert_attack_fails,
    assert_golds_resolve,
    calc_task,
    make_diff,
)

# slow: one image FROM the local Python base (seconds once the bases exist: CI builds them for
# tests/docker) and 67 gradings, three sandboxes at a time
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def calc_image(tmp_path_factory):
    """(root, the calc task, its snapshot, the image holding it at /testbed)."""
    root = tmp_path_factory.mktemp("redteam")
    task = calc_task(root)
    snapshot = RepoStore(root / "repos", root / "cache").snapshot(task.repo, task.base_commit)
    context = root / "image"
    shutil.copytree(snapshot, context / "testbed", ignore=shutil.ignore_patterns(".git"))
    shutil.copytree(flask_wheels(), context / "wheels")
    return root, task, snapshot, built_image("redteam-calc", context, swe_dockerfile("/testbed"))


def grade_in_image(root, image, items: list) -> list:
    async def main():
        async with SessionHost() as host:
            grader = ImageRepoGrader(host, root / "images", concurrency=3)
            return await asyncio.gather(*(grader.grade(t, image, diff) for t, diff in items))

    return asyncio.run(main())


@pytest.fixture(scope="module")
def redteam(calc_image):
    root, task, snapshot, image = calc_image
    test_patch = make_diff(snapshot, root / "scratch", Attack("test patch", {"tests/test_extra.py": (
        "from calc import add\n\n\ndef test_add_more():\n    assert add(10, 5) == 15\n")}, ""))
    tasks = {"calc": task, "calc-tp": dataclasses.replace(task, instance_id="redteam__calc-2", test_patch=test_patch,
                                                           fail_to_pass=(EXTRA,), pass_to_pass=(SUB,))}
    items = [*((t, t.gold_patch) for t in tasks.values()),
             *((tasks[a.task], make_diff(snapshot, root / "scratch", a)) for a in ATTACKS)]

    results = grade_in_image(root, image, items)
    return results[:2], dict(zip((a.id for a in ATTACKS), results[2:], strict=True))


def test_calc_gold_resolves_in_the_image(redteam):
    assert_golds_resolve(redteam[0])


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.id for a in ATTACKS])
def test_attack_is_not_resolved_in_the_image(redteam, attack):
    assert_attack_fails(redteam[1][attack.id], attack)


def test_the_images_interpreter_is_read_only_while_grading(calc_image):
    """The code under test tries to create a file in each directory of the image's interpreter
    install (its site-packages, the standard library, the prefix): each is refused (issue 43 item
    4), while the work dir stays writable."""
    root, task, snapshot, image = calc_image
    probe = ("    import os, sys, sysconfig, _pytest\n"
             "    for d in {os.path.dirname(os.path.dirname(_pytest.__file__)), sysconfig.get_paths()['stdlib'], sys.prefix, '.'}:\n"
             "        try:\n            os.close(os.open(os.path.join(d, 'planted.py'), os.O_WRONLY | os.O_CREAT, 0o644))\n"
             "            print('WROTE', d)\n        except OSError as exc:\n            print('BLOCKED', d, exc.errno)")
    diff = make_diff(snapshot, root / "scratch", Attack("probe", {"calc/__init__.py": _with_add(probe)}, "unresolved"))
    (r,) = grade_in_image(root, image, [(task, diff)])
    assert (r.status, r.reward) == ("unresolved", 0.0), r
    assert r.log_tail.count("BLOCKED") == 3 and r.log_tail.count("WROTE") == 1, r.log_tail[-3000:]
    assert "WROTE ." in r.log_tail, r.log_tail[-3000:]
