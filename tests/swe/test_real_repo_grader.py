"""The grader on real SWE-bench Lite rows (``../shared/data/swe-bench-lite``: upstream rows, one git
bundle per repository, tag = instance id): the gold patch resolves and the empty one does not under
the pytest versions these projects pin (no false ``tampered``: issue 34 item 3), and the red team's
attacks, aimed at a real instance, resolve none (item 7).

Environments are made by hand from SWE-bench's published specs for these (repo, version) pairs
(``swebench.harness.constants``: flask 2.3 on Python 3.11 with click 8.1.3, itsdangerous 2.1.2,
Jinja2 3.1.2, MarkupSafe 2.1.1, Werkzeug 2.3.7; marshmallow 3.0's ``[tests]`` extra: pytest, pytz,
simplejson), each project importable from ``src`` as its editable install makes it, on the
sandbox's Python, with the pytest pinned per case. The default suite grades flask's row under
pytest 7.4.0 (where the false ``tampered`` was first seen); the other versions, marshmallow and
the red team run under ``slow``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from coderl.swe.store import RepoStore, git
from coderl.swe.task import EnvSpec, RepoTask
from tests.helpers.require import needs
from tests.swe.test_grader_redteam import (
    ATTACKS,
    FORGE_PLUGIN,
    Attack,
    RewriteTarget,
    grade_all,
    make_diff,
    runtime_rewrites,
)

LITE = Path(os.environ.get("CODERL_SWE_LITE", Path(__file__).resolve().parents[3] / "shared" / "data" / "swe-bench-lite"))
FLASK, MARSHMALLOW = "pallets__flask-4992", "marshmallow-code__marshmallow-1359"
PINS = {FLASK: ("click==8.1.3", "itsdangerous==2.1.2", "Jinja2==3.1.2", "MarkupSafe==2.1.1", "Werkzeug==2.3.7"),
        MARSHMALLOW: ("pytz", "simplejson")}
CASES = [pytest.param(FLASK, "pytest==7.4.0", id="flask-pytest-7.4.0"),
         pytest.param(FLASK, "pytest==8.3.3", id="flask-pytest-8.3.3", marks=pytest.mark.slow),
         pytest.param(MARSHMALLOW, "pytest==7.4.0", id="marshmallow-pytest-7.4.0", marks=pytest.mark.slow),
         pytest.param(MARSHMALLOW, "pytest==8.3.3", id="marshmallow-pytest-8.3.3", marks=pytest.mark.slow)]

pytestmark = needs((LITE / "rows.json").is_file(), f"no SWE-bench Lite copy at {LITE}")


def runnable(ids: list[str]) -> tuple[str, ...]:
    """The ids pytest can name: SWE-bench's log parser cut marshmallow's parametrized ids at their
    first space (``test_make_error[required-Missing``), which no test has; mapping them back is the
    data builder's job (``coderl data swe-bench``), here they are left out."""
    return tuple(i for i in ids if i.count("[") == i.count("]"))


def real_task(root: Path, instance_id: str, pytest_pin: str) -> RepoTask:
    """The row as a task on a mirror made from its bundle (the base commit: the tag's commit)."""
    row = next(r for r in json.loads((LITE / "rows.json").read_text()) if r["instance_id"] == instance_id)
    name = row["repo"].replace("/", "__")
    mirror = root / "repos" / name
    if not mirror.exists():
        subprocess.run(["git", "clone", "-q", "--mirror", str(LITE / "repos" / f"{name}.bundle"), str(mirror)], check=True)
    sha = git("rev-parse", f"{instance_id}^{{commit}}", cwd=mirror).strip()
    task = RepoTask.from_row({**row, "base_commit": sha})
    return dataclasses.replace(task, pass_to_pass=runnable(list(task.pass_to_pass)),
                               env=EnvSpec(requirements=(pytest_pin, *PINS.get(instance_id, ())), pythonpath=("src",)))


@pytest.mark.parametrize(("instance_id", "pytest_pin"), CASES)
def test_gold_resolves_and_empty_does_not(tmp_path, instance_id, pytest_pin):
    task = real_task(tmp_path, instance_id, pytest_pin)
    gold, empty = grade_all(tmp_path, [(task, task.gold_patch), (task, "")])
    assert (gold.status, gold.reward, gold.findings) == ("resolved", 1.0, []), (gold.message, gold.log_tail[-2000:])
    assert set(gold.fail_to_pass.values()) == {"PASSED"} and len(gold.pass_to_pass) >= 18
    assert (empty.status, empty.reward, empty.findings) == ("unresolved", 0.0, []), (empty.message, empty.log_tail[-2000:])
    assert "PASSED" not in empty.fail_to_pass.values() and set(empty.pass_to_pass.values()) == {"PASSED"}


# ---------------------------------------------------------------------------- item 7: the red team on flask
# the FAIL_TO_PASS test (tests/test_config.py::test_config_from_file_toml, from the test patch)
# loads a TOML file through Config.from_file(..., text=False), which the base commit lacks
FLASK_TARGET = RewriteTarget(
    "test_config.py", "test_config_from_file_toml",
    'app.config.from_file(\n        os.path.join(current_dir, "static", "config.toml"), tomllib.load, text=False\n    )',
    'app.config.update(TEST_KEY="foo", SECRET_KEY="config")', "app.config.from_file(",
    ("frame.f_locals['app'].config.update(TEST_KEY='foo', SECRET_KEY='config')", "_line = frame.f_lineno",
     "while 'common_object_test(app)' not in linecache.getline(frame.f_code.co_filename, _line):",
     "    _line += 1", "frame.f_lineno = _line"))
CALC_NAMES = {"tests/test_calc.py": "tests/test_config.py", "tests/test_extra.py": "tests/test_extra.py"}


def adapt(attack: Attack, init: str, config: str) -> Attack:
    """A red-team attack on ``calc`` aimed at flask instead: what ran at the package's import runs at
    the end of ``flask/__init__.py`` (the tests' conftest imports flask), what ran in ``add`` runs
    in ``Config.__init__`` (every ``Flask()`` of the test calls it), files beside the package go
    beside flask's, files at the top go where flask's ``sys.path`` has them (``src/``), the test
    file is flask's; the run-time rewrites are made for flask's test."""
    rewrites = runtime_rewrites(FLASK_TARGET)
    writes: dict = {}
    for path, text in attack.writes.items():
        if path == "calc/__init__.py":
            prelude, _, rest = text.partition("\n\ndef add(a, b):\n") if "\n\ndef add(a, b):\n" in text else (text, "", "")
            body = rest.partition("\n    return a - b\n\n\ndef sub")[0]
            prelude = rewrites.get(attack.id, prelude.replace("test_calc", "test_config").replace("test_add", "test_config_from_file_toml"))
            writes["src/flask/__init__.py"] = init + "\n\n" + prelude + "\n"
            if body.strip() not in ("", "pass"):
                anchor = "        super().__init__(defaults or {})\n"
                writes["src/flask/config.py"] = config.replace(anchor, anchor + "".join(
                    f"    {line}\n" for line in body.splitlines()))
        elif path.startswith("calc/"):
            writes["src/flask/" + path[5:]] = text
        elif path in CALC_NAMES:
            writes[CALC_NAMES[path]] = text
        elif "/" not in path and not attack.id.startswith("config-root"):
            writes["src/" + path] = text  # forge_plugin.py, pytest.py, sitecustomize.py, a .pth: importable
        elif path.split("/")[0] in ("pytest", "_pytest", "pluggy") or ".dist-info/" in path:
            writes["src/" + path] = text
        else:
            writes[path] = text
    links = tuple((CALC_NAMES.get(p, p), d.replace("calc/", "src/flask/")) for p, d in attack.links)
    renames = tuple((CALC_NAMES.get(a, a), CALC_NAMES.get(b, b).replace("old_calc", "old_config")) for a, b in attack.renames)
    return dataclasses.replace(attack, writes=writes, links=links, renames=renames)


@pytest.mark.slow
def test_red_team_on_flask_resolves_nothing(tmp_path):
    """Every attack of the red team (but the ones on ``calc``'s test-patch variant), aimed at
    pallets__flask-4992 under pytest 7.4.0: none resolves; each graded as on ``calc`` where its
    route is the same (the run-time rewrites: ``tampered``)."""
    task = real_task(tmp_path, FLASK, "pytest==7.4.0")
    snapshot = RepoStore(tmp_path / "repos", tmp_path / "cache").snapshot(task.repo, task.base_commit)
    init, config = (snapshot / "src/flask/__init__.py").read_text(), (snapshot / "src/flask/config.py").read_text()
    attacks = [adapt(a, init, config) for a in ATTACKS if a.task == "calc"]
    attacks.append(Attack("conftest-tests-edited-flask", {"tests/conftest.py": FORGE_PLUGIN}, "unresolved"))
    results = grade_all(tmp_path, [(task, task.gold_patch)] + [(task, make_diff(snapshot, tmp_path / "scratch", a))
                                                               for a in attacks])
    assert results[0].status == "resolved", results[0]
    table = {a.id: (r.status, r.findings[:2], r.message[:200]) for a, r in zip(attacks, results[1:], strict=True)}
    for name, (status, findings, message) in table.items():
        print(f"{name:45s} {status:10s} {'; '.join(findings)[:150] or message[:100]}")
    won = {k: v for k, v in table.items() if v[0] == "resolved"}
    assert not won, won
    for a in attacks:
        if a.id.startswith("rewrite-"):
            assert table[a.id][0] == "tampered", (a.id, table[a.id])


# ---------------------------------------------------------------------------- item 5: pytest's own rows
def test_the_test_runners_own_rows_are_marked_not_gradable(tmp_path):
    """pytest-dev/pytest's rows: sandbox_error (reward None, never a wrong answer), each with the
    reason, decided from the base commit before any environment is built (docs/agent.md, "The
    test runner's own repository")."""
    rows = [r for r in json.loads((LITE / "rows.json").read_text()) if r["repo"] == "pytest-dev/pytest"]
    assert len(rows) == 8
    tasks = [real_task(tmp_path, r["instance_id"], "pytest") for r in rows]
    for r in grade_all(tmp_path, [(t, t.gold_patch) for t in tasks]):
        assert (r.status, r.reward) == ("sandbox_error", None), r
        assert r.message.startswith("not gradable: the repository is the test runner itself (src/_pytest/"), r.message
