"""`coderl data swe`: SWE-bench / SWE-Gym shaped rows -> verl parquet for the gateway agent loop.

Each kept row has its repository snapshot built now (from ``--repos``: a mirror or tarball
directory, no network), so training never waits on git, and, with ``--build-envs``, its Python
environment too. A row whose repository or base commit is not there, whose fields are unusable,
or whose environment cannot be built is a counted drop (``report.json``). ``--source builtin``
takes coderl's own task set (built into ``OUT/builtin``). Schema: docs/agent.md, "Repository tasks".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coderl.data.common import BuildReport, Drop, convert, read_rows, seeded_split, write_jsonl, write_parquet
from coderl.errors import BadRequest
from coderl.swe.environment import EnvBuildError, build_env
from coderl.swe.store import RepoStore, RepoUnavailable
from coderl.swe.task import InvalidTask, RepoTask

AGENT_NAME = "coderl_gateway_agent"
DATA_SOURCE = "coderl/swe"
INSTRUCTIONS = ("\n\nThe repository is checked out at /repo (a git work tree). Change its code so that the "
                "issue above is resolved. Do not modify the tests: they are restored before grading.")


def prompt_of(task: RepoTask) -> list[dict[str, str]]:
    return [{"role": "user", "content": task.problem_statement.strip() + INSTRUCTIONS}]


def swe_row(task: RepoTask, snapshot: Path, env_dir: Path | None, repos_dir: Path, cache_dir: Path) -> dict[str, Any]:
    """One verl row. ``extra_info`` carries what the agent loop and the grader need on this
    machine: the snapshot to open the episode on, the environment, and the task itself (as JSON,
    so parquet never has to infer a schema for its lists)."""
    return {
        "data_source": DATA_SOURCE,
        "agent_name": AGENT_NAME,
        "prompt": prompt_of(task),
        "ability": "swe",
        "reward_model": {"style": "rule", "ground_truth": task.instance_id},
        "extra_info": {"instance_id": task.instance_id, "repo_dir": str(snapshot),
                       "env_dir": str(env_dir) if env_dir else "", "repos_dir": str(repos_dir),
                       "cache_dir": str(cache_dir), "task": json.dumps(task.to_row())},
    }


def build_swe(source: str, out: str | Path, *, repos_dir: str | Path | None, cache_dir: str | Path,
              build_envs: bool = False, find_links: str | Path | None = None, limit: int | None = None,
              val_fraction: float = 0.0, seed: int = 42, split: str | None = None) -> BuildReport:
    """Write train.parquet (+ validation.parquet with ``val_fraction``), tasks.jsonl (the task
    rows as read, for `coderl eval swe`) and report.json under ``out``. ``split`` (builtin only)
    keeps the builtin set's ``train`` or ``heldout`` tasks."""
    out, cache = Path(out), Path(cache_dir).resolve()
    if split is not None and source != "builtin":
        raise BadRequest("--split selects among the builtin tasks: use it with --source builtin")
    if source == "builtin":
        from coderl.swe.task_set import build_task_set

        built = out / "builtin"
        build_task_set(built, split)
        source, repos_dir = str(built / "tasks.jsonl"), built / "repos"
    if repos_dir is None:
        raise BadRequest("--repos is required (a directory of git mirrors or repository tarballs)")
    repos = Path(repos_dir).resolve()
    if not repos.is_dir():
        raise BadRequest(f"--repos {repos}: no such directory")
    store = RepoStore(repos, cache)
    report = BuildReport("swe")
    links = Path(find_links) if find_links else None

    def one(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            task = RepoTask.from_row(row)
        except InvalidTask as exc:
            raise Drop("invalid task row", str(exc)) from exc
        if not store.has(task.repo):
            raise Drop("repository missing from --repos", task.repo)
        try:
            snapshot = store.snapshot(task.repo, task.base_commit)
        except RepoUnavailable as exc:
            raise Drop("base commit not in the mirror", str(exc)) from exc
        env_dir = None
        if build_envs:
            try:
                env_dir = build_env(task.env, cache, find_links=links)
            except EnvBuildError as exc:
                raise Drop("environment cannot be built", f"{task.instance_id}: {exc}") from exc
        return swe_row(task, snapshot, env_dir, repos, cache), task.to_row()

    pairs = list(convert(report, read_rows(source, limit=limit), one, "swe"))
    report.kept = len(pairs)
    report.check_nonempty()
    rows = [row for row, _ in pairs]
    train, val = seeded_split(rows, val_fraction, seed) if val_fraction else (rows, [])
    for split, split_rows in (("train", train), ("validation", val)):
        if split_rows:
            for i, r in enumerate(split_rows):
                r["extra_info"].update(split=split, index=i)
            report.outputs.append(write_parquet(split_rows, out / f"{split}.parquet"))
    report.outputs.append(write_jsonl([task for _, task in pairs], out / "tasks.jsonl"))
    report.save(out)
    return report
