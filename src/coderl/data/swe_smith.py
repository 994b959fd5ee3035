"""`coderl data swe-smith`: SWE-smith's task mirrors (one git branch per bug) -> task rows in the
schema `coderl data swe-bench` writes (``tasks.jsonl`` + ``report.json``, every dropped branch with
its reason), for `coderl eval swe-gate --repos OUT/repos` and training.

A mirror is ``<owner>__<name>.<sha8>`` as a git bundle (``.bundle``) or a git repository: ``main``
holds the repository at the mirror's base commit and each other branch
``<owner>__<name>.<sha8>.<kind>__<id>`` one task, in either layout SWE-smith has published:
``Initial commit -> Bug Patch -> Remove F2P Tests`` (the tests the last commit removed stay out of
the starting tree and come back in the test patch) or ``Initial commit -> Bug Patch`` (an
unfiltered candidate: which tests it breaks is found by running them; their files are hidden the
same way). Both are run, so FAIL_TO_PASS and PASS_TO_PASS are always measured here
(``coderl.data.bug_tasks``), never taken on trust.

The environment per repository is SWE-smith's own (``repos.json`` beside the mirrors, or
``--specs``: the Python version, the exact pins of its conda environment, its editable install);
for a mirror without one, the environment ``coderl.swe.env_infer`` reads from the repository's
tree (its branches are dropped with that module's reason when it refuses).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import time
from pathlib import Path
from typing import Any

from coderl.data.bug_tasks import BugCandidate, Drop, RepoBuilder
from coderl.data.common import write_jsonl
from coderl.data.decontam import overlap_report
from coderl.errors import BadRequest, CoderlError
from coderl.sandbox.session import SessionHost
from coderl.swe.store import build_once, git
from coderl.swe.task import DEFAULT_TEST_CMD, EnvSpec

MIRROR_NAME = re.compile(r"^(?P<owner>[A-Za-z0-9_.-]+?)__(?P<name>[A-Za-z0-9_.-]+)\.(?P<sha>[0-9a-f]{8})$")
_PIP_INSTALL = re.compile(r"^(?:python -m )?pip install (?P<args>.+)$")


def find_mirrors(mirrors_dir: Path) -> dict[str, Path]:
    """``<owner>__<name>.<sha8>`` -> its bundle or git directory, for each mirror in the directory."""
    out = {}
    for path in sorted(mirrors_dir.iterdir()):
        name = path.name.removesuffix(".bundle").removesuffix(".git")
        is_git = path.is_dir() and ((path / "HEAD").is_file() or (path / ".git").exists())
        if MIRROR_NAME.match(name) and ((path.is_file() and path.suffix == ".bundle") or is_git):
            out[name] = path
    return out


def upstream_repo(mirror: str) -> str:
    m = MIRROR_NAME.match(mirror)
    if m is None:
        raise BadRequest(f"{mirror}: not a SWE-smith mirror name (<owner>__<name>.<sha8>)")
    return f"{m['owner']}/{m['name']}"


def smith_spec(entry: dict[str, Any]) -> tuple[EnvSpec, str]:
    """SWE-smith's environment of a repository (a ``repos.json`` entry) as an ``EnvSpec``, and the
    test command: its exact pins, then its editable install (``pip install -e .[dev]`` -> ``.[dev]``),
    resolved as of the mirror's creation (every pin is exact, so the date only bounds what they pull)."""
    pins: list[str] = []
    install = ""
    for step in entry.get("install_effective") or entry.get("install") or []:
        m = _PIP_INSTALL.match(step.strip())
        if m is None:
            raise BadRequest(f"{entry.get('repo')}: install step {step!r} is not a pip install")
        words = m["args"].split()
        if words[0] == "-e":
            install = words[1]
        else:
            pins += [w for w in words if not w.startswith("-")]
    spec = EnvSpec.from_value({"python": str(entry["python"]), "requirements": pins, "install": install,
                               "resolved_at": str(entry.get("initial_commit_date") or "")})
    test_cmd = str(entry.get("test_cmd") or "")
    return spec, (f"python -m {test_cmd}" if test_cmd.startswith("pytest") else DEFAULT_TEST_CMD)


def read_specs(path: Path | None) -> dict[str, dict[str, Any]]:
    """``repos.json`` entries by mirror name (``<owner>__<name>.<sha8>``)."""
    if path is None or not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BadRequest(f"{path}: not JSON ({exc})") from exc
    return {str(e["mirror"]).rsplit("/", 1)[-1]: e for e in entries if isinstance(e, dict) and e.get("mirror")}


def read_statements(path: str | None) -> dict[str, str]:
    """Published problem statements, JSONL of {instance_id, problem_statement}."""
    if not path:
        return {}
    out = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out[str(row["instance_id"])] = str(row["problem_statement"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise BadRequest(f"--statements {path} line {n}: not a JSON object with instance_id and "
                             f"problem_statement ({exc})") from exc
    return out


def mirror_git(path: Path, cache: Path) -> Path:
    """A git directory of the mirror: itself, or its bundle cloned once into the cache."""
    if path.is_dir():
        return path
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]

    def build(tmp: Path) -> Path:
        git("clone", "-q", "--mirror", str(path.resolve()), str(tmp / "git"))
        return tmp / "git"

    return build_once(cache / "mirrors" / f"{path.name}-{digest}", build)


def task_branches(source: Path, mirror: str) -> list[str]:
    refs = git("for-each-ref", "--format=%(refname:short)", "refs/heads/", cwd=source).split()
    return sorted(r for r in refs if r.startswith(mirror + "."))


def sample(branches: list[str], per_repo: int | None, seed: int, mirror: str) -> list[str]:
    """Every branch, or ``per_repo`` of them chosen by ``seed`` (the same every run)."""
    if per_repo is None or per_repo >= len(branches):
        return branches
    return sorted(random.Random(f"{seed}/{mirror}").sample(branches, per_repo))


def candidate(source: Path, branch: str) -> BugCandidate:
    """The branch as a bug candidate, by its layout (see the module docstring)."""
    log = [line.split("\x00", 1) for line in git("log", "--format=%H%x00%s", branch, cwd=source).splitlines()]
    kind = branch.rsplit(".", 1)[-1].split("__", 1)[0]
    if len(log) == 3 and log[0][1] == "Remove F2P Tests":
        clean, bug, head = log[2][0], log[1][0], log[0][0]
        status = git("diff", "--name-status", "--no-renames", bug, head, cwd=source).splitlines()
        hidden = tuple(sorted(line.split("\t", 1)[1] for line in status))
        layout = "3-commit"
    elif len(log) == 2:
        clean, bug, hidden, layout = log[1][0], log[0][0], None, "2-commit"
    else:
        raise Drop(f"unknown layout: {len(log)} commits ({' -> '.join(s for _, s in reversed(log))})")
    diff = git("diff", "--binary", clean, bug, cwd=source)
    if not diff.strip():
        raise Drop("the bug patch changes nothing")
    return BugCandidate(instance_id=branch, kind=kind, clean_commit=clean, bug_diff=diff, hidden=hidden,
                        meta={"layout": layout, "source": "swe-smith", "mirror_branch_head": log[0][0]})


def build_swe_smith(mirrors_dir: str | Path, out: str | Path, *, cache_dir: str | Path, per_repo: int | None = None,
                    seed: int = 0, instances: list[str] | None = None, statements: str | None = None,
                    build_envs: bool = False, specs: str | None = None, jobs: int = 2,
                    bench_rows: str | None = None, drop_overlaps: bool = False) -> dict[str, Any]:
    """Write ``out/tasks.jsonl``, ``out/report.json`` and the starting commits in ``out/repos``."""
    mirrors_path, cache, out = Path(mirrors_dir).resolve(), Path(cache_dir).resolve(), Path(out).resolve()
    if not mirrors_path.is_dir():
        raise BadRequest(f"--mirrors {mirrors_path}: no such directory")
    if not build_envs:
        raise BadRequest("swe-smith runs every branch's tests to find FAIL_TO_PASS: pass --build-envs (each "
                         "repository's environment is built once and cached)")
    mirrors = find_mirrors(mirrors_path)
    if not mirrors:
        raise BadRequest(f"--mirrors {mirrors_path}: no <owner>__<name>.<sha8> bundle or git directory")
    spec_entries = read_specs(Path(specs) if specs else mirrors_path / "repos.json")
    given = read_statements(statements)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"mirrors": {}, "dropped": {}, "environments": {}}
    rows: list[dict[str, Any]] = []
    t0 = time.monotonic()
    wanted = set(instances or [])
    seen: set[str] = set()
    for mirror, path in mirrors.items():
        source = mirror_git(path, cache)
        branches = task_branches(source, mirror)
        chosen = [b for b in branches if b in wanted] if wanted else sample(branches, per_repo, seed, mirror)
        seen.update(chosen)
        if not chosen:
            continue
        stats = asyncio.run(_mirror_rows(mirror, source, chosen, spec_entries.get(mirror), out, cache, given,
                                         jobs, rows, report))
        report["mirrors"][mirror] = {"branches": len(branches), **stats}
    if wanted - seen:
        raise BadRequest(f"--instances: no such branch in {mirrors_path}: {', '.join(sorted(wanted - seen)[:5])}")
    overlaps = overlap_report(rows, bench_rows)
    if drop_overlaps:
        for iid, found in overlaps.items():
            if found["overlaps"]:
                report["dropped"][iid] = f"overlaps SWE-bench: {'; '.join(found['overlaps'])}"
        rows = [r for r in rows if not overlaps[r["instance_id"]]["overlaps"]]
    write_jsonl(rows, out / "tasks.jsonl")
    report.update({"served": len(rows), "instances": [r["instance_id"] for r in rows], "overlap": overlaps,
                   "wall_s": round(time.monotonic() - t0, 1), "repos": str(out / "repos"),
                   "tasks": str(out / "tasks.jsonl"), "cache": str(cache)})
    (out / "report.json").write_text(json.dumps(report, indent=2, sort_keys=True))
    return report


async def _mirror_rows(mirror: str, source: Path, branches: list[str], entry: dict[str, Any] | None, out: Path,
                       cache: Path, statements: dict[str, str], jobs: int,
                       rows: list[dict[str, Any]], report: dict[str, Any]) -> dict[str, Any]:
    """The rows of one mirror's chosen branches (appended to ``rows``); its counts per layout."""
    t0 = time.monotonic()
    repo = str(entry["repo"]) if entry else upstream_repo(mirror)
    counts: dict[str, dict[str, int]] = {}

    def drop(branch: str, layout: str, why: str) -> None:
        report["dropped"][branch] = why
        counts.setdefault(layout, {"sampled": 0, "kept": 0})["sampled"] += 1

    spec, test_cmd = smith_spec(entry) if entry else (None, DEFAULT_TEST_CMD)
    gate = asyncio.Semaphore(jobs)
    async with SessionHost() as host:
        builder = RepoBuilder(repo, out / "repos", cache, spec, test_cmd, host, statements=statements)

        # the candidates, then each clean commit's environment, one at a time (an environment is
        # built once; two builds of it at once in one process would race), then the suites
        ready: list[tuple[BugCandidate, Path]] = []
        envs: dict[str, Path | str] = {}
        for branch in branches:
            layout = "unknown"
            try:
                cand = candidate(source, branch)
                layout = cand.meta["layout"]
                clean = builder.import_commit(source, cand.clean_commit)
                if clean not in envs:
                    try:
                        envs[clean] = await asyncio.to_thread(builder.environment, clean)
                    except CoderlError as exc:
                        envs[clean] = f"{type(exc).__name__}: {str(exc)[:500]}"
                    report["environments"].setdefault(repo, {})[clean] = str(envs[clean])
                if isinstance(envs[clean], str):
                    raise Drop(f"the environment cannot be built: {envs[clean]}")
                ready.append((BugCandidate(**{**cand.__dict__, "clean_commit": clean}), Path(envs[clean])))
            except Drop as why:
                drop(branch, layout, str(why))
            except CoderlError as exc:
                drop(branch, layout, f"{type(exc).__name__}: {str(exc)[:500]}")

        async def one(cand: BugCandidate, env_dir: Path) -> None:
            layout = cand.meta["layout"]
            async with gate:
                try:
                    row = await builder.row(cand, env_dir)
                except Drop as why:
                    drop(cand.instance_id, layout, str(why))
                    return
                except CoderlError as exc:
                    drop(cand.instance_id, layout, f"{type(exc).__name__}: {str(exc)[:500]}")
                    return
            rows.append({**row, "mirror": mirror, "environment_from": "repos.json" if entry else "inferred"})
            c = counts.setdefault(layout, {"sampled": 0, "kept": 0})
            c["sampled"] += 1
            c["kept"] += 1
            print(f"swe-smith: kept {cand.instance_id} ({len(row['FAIL_TO_PASS'])} failing tests)", flush=True)

        await asyncio.gather(*(one(c, e) for c, e in ready))
    rows.sort(key=lambda r: r["instance_id"])
    return {"repo": repo, "layouts": counts, "wall_s": round(time.monotonic() - t0, 1), "suite_runs": builder.runs,
            "suite_run_s": round(builder.run_s, 1)}
