"""`coderl data swe-bench`: upstream SWE-bench rows -> task rows `coderl eval swe --tasks` reads.

For each row: its repository from ``--repos`` (a mirror ``<owner>__<name>``, with history, where the
row's ``base_commit`` is; or a bundle ``<owner>__<name>.bundle`` whose tag named by the instance id
is a commit with the base tree, as ../shared/data/swe-bench-lite/ has them: the task row's
``base_commit`` is then that commit, and ``upstream_base_commit`` keeps the row's), its snapshot
built in the cache, its environment from ``coderl.swe.env_tables`` (SWE-bench's specification of its
(repo, version) with coderl's overlay, resolved as of the row's own date, built from the row's own
tree; rows share a built environment only when their resolutions are the same), and its test ids as the grader runs
them: pytest node ids as they are, bare test function names (sympy's own runner) as
``file::name`` through the test patch's files, Django's unittest names (``name (module.Class)``)
as they are, with SWE-bench's ``tests/runtests.py`` command (``coderl.swe.django_run``). A row
that cannot be served is skipped with its reason, per instance, in ``report.json`` (never
silently): repository or commit missing, no environment for its version, unittest names of a
repository other than Django's, a name in none of the test patch's files.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coderl.data.common import progress, read_rows, write_jsonl
from coderl.errors import BadRequest, CoderlError, EnvBuildError
from coderl.swe.django_run import DJANGO_TEST_CMD, runs_django_repo
from coderl.swe.env_infer import infer_env, validate_env
from coderl.swe.env_tables import table_spec
from coderl.swe.environment import PIN_OVERRIDES, build_env, resolution_date
from coderl.swe.patch import MalformedDiff, split_diff
from coderl.swe.store import RepoStore, git
from coderl.swe.task import RepoTask

_BARE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNITTEST_ID = re.compile(r"^\S+ \([\w.]+\)$")


class Skip(Exception):
    """This row cannot be served, for this reason."""


def build_swe_bench(rows_file: str | Path, repos_dir: str | Path, out: str | Path, *, cache_dir: str | Path,
                    instances: list[str] | None = None, build_envs: bool = False) -> dict[str, Any]:
    """Write ``out/tasks.jsonl`` and ``out/report.json`` (every instance: served, or skipped and why)."""
    repos, cache, out = Path(repos_dir).resolve(), Path(cache_dir).resolve(), Path(out)
    if not repos.is_dir():
        raise BadRequest(f"--repos {repos}: no such directory")
    rows = [r for r in read_rows(rows_file) if isinstance(r, dict)]
    if instances:
        known = {str(r.get("instance_id")) for r in rows}
        unknown = [i for i in instances if i not in known]
        if unknown:
            raise BadRequest(f"--instances: not in {rows_file}: {', '.join(unknown[:5])}")
        rows = [r for r in rows if str(r.get("instance_id")) in set(instances)]
    store = RepoStore(repos, cache)
    served: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for row in progress(rows, "swe-bench"):
        iid = str(row.get("instance_id") or f"row {len(served) + len(skipped)}")
        try:
            served.append(_serve(row, store))
        except Skip as why:
            skipped[iid] = str(why)
        except CoderlError as exc:
            skipped[iid] = f"{type(exc).__name__}: {exc}"
    tasks = served
    envs: dict[str, str] = {}
    seconds: dict[str, float] = {}
    validation: dict[str, dict[str, Any]] = {}
    if build_envs:
        for source, task in progress(list({t["environment_setup"]["source"]: t for t in tasks}.items()), "environments"):
            t0 = time.monotonic()
            try:
                envs[source] = str(build_env(RepoTask.from_row(task).env, cache))
            except CoderlError as exc:
                envs[source] = f"error: {exc}"
            seconds[source] = round(time.monotonic() - t0, 1)
        validation = _validate_inferred(tasks, envs, store)
        for source, checked in validation.items():
            if not checked.get("collects"):
                envs[source] = (f"error: the inferred environment does not collect the test suite at the base commit: "
                                f"{checked.get('collect_tail', '')[-300:]}")
        failed = {t["instance_id"]: envs[t["environment_setup"]["source"]] for t in tasks
                  if envs[t["environment_setup"]["source"]].startswith("error: ")}
        skipped.update({i: f"environment cannot be built: {e.removeprefix('error: ')}" for i, e in failed.items()})
        tasks = [t for t in tasks if t["instance_id"] not in failed]
        tasks = asyncio.run(_uncut_ids(tasks, envs, store))
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(tasks, out / "tasks.jsonl")
    report = {"read": len(rows), "served": len(tasks), "skipped": skipped,
              "instances": [t["instance_id"] for t in tasks], "environments": envs,
              "environment_s": seconds, "inferred_validation": validation if build_envs else {}, "distinct_environments": len({e for e in envs.values() if not e.startswith("error: ")}),
              "pin_overrides": pin_overrides_by_source(envs),
              "resolution_dates": resolution_dates_by_instance(tasks, envs, cache) if build_envs else {},
              "repos": str(repos), "cache": str(cache), "tasks": str(out / "tasks.jsonl")}
    (out / "report.json").write_text(json.dumps(report, indent=2, sort_keys=True))
    if not tasks:
        top = "; ".join(f"{i}: {why}" for i, why in list(skipped.items())[:3]) or "no rows read"
        raise BadRequest(f"swe-bench: no row could be served ({top})")
    return report


def pin_overrides_by_source(envs: dict[str, str]) -> dict[str, list[dict[str, str]]]:
    """Per environment source, the table pins its project's own requirements replaced (coderl.swe.pin_overrides)."""
    found = {source: Path(env) / PIN_OVERRIDES for source, env in envs.items() if not env.startswith("error: ")}
    return {source: json.loads(path.read_text()) for source, path in found.items() if path.is_file()}


def resolution_dates_by_instance(tasks: list[dict[str, Any]], envs: dict[str, str],
                                 cache: Path) -> dict[str, dict[str, str]]:
    """Per instance whose environment was resolved as of its base commit's date rather than its own
    (``environment.resolution_date``): that date, the row's, and why (uv's words as of the row's)."""
    out = {}
    for task in tasks:
        if envs.get(task["environment_setup"]["source"], "error: ").startswith("error: "):
            continue
        moved = resolution_date(RepoTask.from_row(task).env, cache)
        if moved:
            out[task["instance_id"]] = moved
    return out


def _serve(row: dict[str, Any], store: RepoStore) -> dict[str, Any]:
    try:
        task = RepoTask.from_row(row)
    except CoderlError as exc:
        raise Skip(f"invalid row: {exc}") from exc
    django = runs_django_repo(task.repo)  # tests/runtests.py with unittest's names (coderl.swe.django_run)
    unittest_ids = [t for t in task.tests if _UNITTEST_ID.match(t)]
    if unittest_ids and not django:
        raise Skip(f"test ids of a unittest runner, which the grader's pytest does not run: {unittest_ids[0]!r}")
    mirror = store.mirror(task.repo)
    if mirror is None:
        raise Skip(f"repository {task.repo} is not in --repos (as <owner>__<name> or <owner>__<name>.bundle)")
    commit = _commit(mirror, task)
    version = str(row.get("version") or "")
    snapshot = store.snapshot(task.repo, commit)
    f2p, p2p = (tuple(dict.fromkeys(n for t in ids for n in ([t] if django else _node_ids(t, task.test_patch, snapshot))))
                for ids in (task.fail_to_pass, task.pass_to_pass))
    resolved_at = row_date(row, mirror, commit)
    source = f"{task.repo}@{commit}"
    # the base commit's own date (a bundle's tag is not the row's commit: none), the resolution's
    # fallback when the row's date leaves the base tree's requirements unresolvable
    fallback_at = commit_date(mirror, commit) if commit == task.base_commit else ""
    spec = table_spec(task.repo, version, source=source, resolved_at=resolved_at,
                      has_file=lambda path: (snapshot / path).is_file(), fallback_at=fallback_at)
    inferred = spec is None
    if spec is None:  # no table: the repository's own metadata at that commit, validated when built
        try:
            spec = infer_env(snapshot, source=source, resolved_at=resolved_at)
        except EnvBuildError as exc:
            raise Skip(f"no environment for {task.repo} version {version!r}: SWE-bench's specifications "
                       f"(coderl/swe/env_tables.json) have none, and {exc}") from exc
    out = {**task.to_row(), "base_commit": commit, "FAIL_TO_PASS": list(f2p), "PASS_TO_PASS": list(p2p),
           "version": version, "created_at": str(row.get("created_at") or ""),
           "upstream_base_commit": task.base_commit, "environment_setup": spec.to_dict(),
           **({"test_cmd": DJANGO_TEST_CMD} if django else {}),
           "environment_inferred": inferred}
    return out


def row_date(row: dict[str, Any], mirror: Path, commit: str) -> str:
    """The date the row's environment is resolved as of: its ``created_at`` (when the fix was
    opened; SWE-bench's own date), else its commit's committer date; ISO, UTC, ``Z``."""
    raw = str(row.get("created_at") or "").strip()
    if not raw:
        try:
            raw = git("log", "-1", "--format=%cI", commit, cwd=mirror).strip()
        except CoderlError as exc:
            raise Skip(f"the row has no created_at and its commit's date cannot be read: {exc}") from exc
    try:
        return _utc(raw)
    except ValueError as exc:
        raise Skip(f"created_at {raw!r} is not a date") from exc


def commit_date(mirror: Path, commit: str) -> str:
    """The commit's committer date (ISO, UTC, ``Z``); "" when it cannot be read."""
    try:
        return _utc(git("log", "-1", "--format=%cI", commit, cwd=mirror).strip())
    except (CoderlError, ValueError):
        return ""


def _utc(raw: str) -> str:
    when = datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" ", "T", 1))
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _commit(mirror: Path, task: RepoTask) -> str:
    """The row's base commit where the mirror has it, else the commit of the tag named by the instance."""
    for ref in (f"{task.base_commit}^{{commit}}", f"refs/tags/{task.instance_id}^{{commit}}"):
        try:
            return git("rev-parse", "--verify", "-q", ref, cwd=mirror).strip()
        except CoderlError:
            continue
    raise Skip(f"neither the base commit {task.base_commit[:12]} nor a tag {task.instance_id} is in the mirror")


def _node_ids(test: str, test_patch: str, snapshot: Path) -> list[str]:
    """The pytest node ids of ``test``: itself when it names its file, else the test in each test file
    of the test patch that defines a function of that name (in the base tree or in the patch's new
    lines; read on the host, never applied to the snapshot, whose objects agents see). A name two
    of those files define (sympy__sympy-12236's ``test_noncommutative``, in test_partfrac.py and
    test_polytools.py) is both tests: SWE-bench runs both files and its log has the name twice."""
    if "::" in test or not _BARE_NAME.match(test):
        return [test]
    define = re.compile(rf"^(?:async )?def {re.escape(test)}\(", re.M)
    found = []
    try:
        sections = split_diff(test_patch)
    except MalformedDiff as exc:
        raise Skip(f"the test patch is unreadable: {exc}") from exc
    for section in sections:
        path = section.new_path
        if not path or not path.endswith(".py"):
            continue
        added = "\n".join(line[1:] for line in section.text.splitlines() if line.startswith("+"))
        try:
            base = git("show", f"HEAD:{path}", cwd=snapshot) if section.old_path else ""
        except CoderlError:
            base = ""
        if define.search(added) or define.search(base):
            found.append(path)
    if not found:
        raise Skip(f"test {test!r} is a bare name defined in none of the test patch's files")
    return [f"{path}::{test}" for path in found]


def _validate_inferred(tasks: list[dict[str, Any]], envs: dict[str, str], store: RepoStore) -> dict[str, dict[str, Any]]:
    """Each built inferred environment's test run at its row's base commit (``env_infer.validate_env``)."""
    out = {}
    for task in tasks:
        source = task["environment_setup"]["source"]
        if task.get("environment_inferred") and source not in out and not envs[source].startswith("error: "):
            snapshot = store.snapshot(task["repo"], task["base_commit"])
            out[source] = asyncio.run(validate_env(snapshot, Path(envs[source])))
    return out


# pytest's collection, each node id on a line of its own whatever the verbosity the project's
# configuration sets (``-q`` prints ids, ``-qq`` counts per file, ``addopts = -v`` a tree)
_COLLECT = """import sys, pytest
class Ids:
    def pytest_collection_finish(self, session):
        for item in session.items:
            sys.stdout.write("COLLECTED " + item.nodeid + "\\n")
pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[Ids()])
"""


def cut_ids(task: dict[str, Any]) -> list[str]:
    """Ids SWE-bench's log parser cut at their first space (``test_x[select`` of ``test_x[select a]``):
    their brackets do not close."""
    return [t for t in (*task["FAIL_TO_PASS"], *task["PASS_TO_PASS"]) if t.count("[") != t.count("]")]


async def _uncut_ids(tasks: list[dict[str, Any]], envs: dict[str, str], store: RepoStore) -> list[dict[str, Any]]:
    """The whole ids of cut ones, from pytest's collection of the task's test files (test patch
    applied) in a session sandbox with the task's environment: each cut id becomes every collected
    id whose text before the first space it is. The mapping is kept in the row (``uncut_ids``); a
    cut id nothing matches stays as it is (the grader then reports it ``missing``)."""
    from coderl.sandbox.session import SessionHost
    from coderl.swe.grading_run import test_files

    out = []
    async with SessionHost() as host:
        for task in tasks:
            cut = cut_ids(task)
            if not cut:
                out.append(task)
                continue
            repo_task = RepoTask.from_row(task)
            session = await host.open(store.snapshot(repo_task.repo, repo_task.base_commit),
                                      env_dir=Path(envs[task["environment_setup"]["source"]]))
            try:
                await session.write_file("/tmp/test.patch", repo_task.test_patch.encode())
                files = " ".join(shlex.quote(f) for f in test_files(repo_task))
                await session.write_file("/tmp/collect.py", _COLLECT.encode())
                run = await session.exec(f"git apply /tmp/test.patch && python /tmp/collect.py {files}", timeout_s=600)
            finally:
                await session.close()
            collected = [line[len("COLLECTED "):] for line in run.stdout.splitlines() if line.startswith("COLLECTED ")]
            whole = {c: [n for n in collected if n != c and n.split()[0] == c] for c in cut}
            mapped = {c: ns for c, ns in whole.items() if ns}

            def uncut(ids: list[str], mapped: dict[str, list[str]] = mapped) -> list[str]:
                return list(dict.fromkeys(n for t in ids for n in mapped.get(t, [t])))

            out.append({**task, "FAIL_TO_PASS": uncut(task["FAIL_TO_PASS"]), "PASS_TO_PASS": uncut(task["PASS_TO_PASS"]),
                        "uncut_ids": mapped, "cut_ids_unmatched": [c for c in cut if c not in mapped]})
    return out
