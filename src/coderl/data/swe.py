"""`coderl data swe`: SWE-bench / SWE-Gym shaped rows -> verl parquet for the gateway agent loop.

Each kept row has its repository snapshot built now (from ``--repos``: a mirror or tarball
directory, no network), so training never waits on git, and, with ``--build-envs``, its Python
environment too. A row whose repository or base commit is not there, whose fields are unusable,
or whose environment cannot be built is a counted drop (``report.json``). ``--source builtin``
takes coderl's own task set (built into ``OUT/builtin``). With ``--image TEMPLATE`` the rows name
each task's image instead (SWE-bench's, SWE-Gym's, SWE-smith's, R2E-Gym's: the repository and its
environment inside, at ``--workdir``), no mirror needed: the agent loop runs and grades them in the
image (`coderl.swe.episodes`); ``images.txt`` lists the references for ``coderl images pull``.
Schema: docs/agent.md, "Repository tasks" and "Tasks in their own images".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from coderl.data.common import BuildReport, Drop, convert, read_rows, seeded_split, write_jsonl, write_parquet
from coderl.errors import BadRequest
from coderl.sandbox.image_rootfs import USER_SPEC
from coderl.swe.bytecode import compile_snapshot
from coderl.swe.environment import EnvBuildError, build_env
from coderl.swe.store import RepoStore, RepoUnavailable
from coderl.swe.task import InvalidTask, RepoTask
from coderl.swe.task_ref import AGENT_NAME, ImageRef, TaskRef

DATA_SOURCE = "coderl/swe"
INSTRUCTIONS = ("\n\nThe repository is checked out at {workdir} (a git work tree). Change its code so that the "
                "issue above is resolved. Do not modify the tests: they are restored before grading.")
IMAGE_WORKDIR = "/testbed"  # where SWE-bench's, SWE-Gym's, SWE-smith's and R2E-Gym's images hold the repository


def prompt_of(task: RepoTask, workdir: str = "/repo") -> list[dict[str, str]]:
    return [{"role": "user", "content": task.problem_statement.strip() + INSTRUCTIONS.format(workdir=workdir)}]


def image_reference(template: str, instance_id: str) -> str:
    """``template`` with ``{instance_id}`` as is and ``{sweb_id}`` as SWE-bench names its images
    (lower case, ``__`` -> ``_1776_``: ``swebench/sweb.eval.x86_64.{sweb_id}:latest``)."""
    try:
        return template.format(instance_id=instance_id, sweb_id=instance_id.lower().replace("__", "_1776_"))
    except (KeyError, IndexError, ValueError) as exc:
        raise BadRequest(f"--image {template!r}: only {{instance_id}} and {{sweb_id}} may be named ({exc})") from None


def image_row(task: RepoTask, image: str, python: str, workdir: str, cache_dir: Path, user: str = "") -> dict[str, Any]:
    """One verl row of a task whose environment is ``image`` (`coderl.swe.task_ref`'s fields;
    ``user`` '' = the image's)."""
    return {
        "data_source": DATA_SOURCE,
        "agent_name": AGENT_NAME,
        "prompt": prompt_of(task, workdir),
        "ability": "swe",
        "reward_model": {"style": "rule", "ground_truth": task.instance_id},
        "extra_info": TaskRef.of_repo_task(task, image=ImageRef(image, python, workdir, user),
                                           cache_dir=cache_dir).to_extra_info(),
    }


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
        "extra_info": TaskRef.of_repo_task(task, repo_dir=snapshot, env_dir=env_dir, repos_dir=repos_dir,
                                           cache_dir=cache_dir).to_extra_info(),
    }


def build_swe(source: str, out: str | Path, *, repos_dir: str | Path | None, cache_dir: str | Path,
              build_envs: bool = False, find_links: str | Path | None = None, limit: int | None = None,
              val_fraction: float = 0.0, seed: int = 42, split: str | None = None, image: str | None = None,
              image_python: str = "python3", workdir: str = IMAGE_WORKDIR, image_user: str = "") -> BuildReport:
    """Write train.parquet (+ validation.parquet with ``val_fraction``), tasks.jsonl (the task
    rows as read, for `coderl eval swe`) and report.json under ``out``. ``split`` (builtin only)
    keeps the builtin set's ``train`` or ``heldout`` tasks. ``image``: a reference template; the
    rows name each task's image (``image_reference``) and images.txt lists them."""
    out, cache = Path(out), Path(cache_dir).resolve()
    if split is not None and source != "builtin":
        raise BadRequest("--split selects among the builtin tasks: use it with --source builtin")
    if image is not None:
        if source == "builtin" or build_envs or repos_dir is not None:
            raise BadRequest("--image names each task's environment: no --source builtin, --repos or --build-envs")
        if not workdir.startswith("/"):
            raise BadRequest(f"--workdir must be an absolute path, got {workdir!r}")
        if image_user and not re.match(USER_SPEC, image_user):
            raise BadRequest(f"--image-user must be name, uid, name:group or uid:gid, got {image_user!r}")
        return _build_image_rows(source, out, cache, image, image_python, workdir, limit, val_fraction, seed,
                                 user=image_user)
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
            compile_snapshot(snapshot, env_dir)  # the episodes' first import: no compile
        return swe_row(task, snapshot, env_dir, repos, cache), task.to_row()

    pairs = list(convert(report, read_rows(source, limit=limit), one, "swe"))
    return _write(report, pairs, out, val_fraction, seed)


def _build_image_rows(source: str, out: Path, cache: Path, template: str, python: str, workdir: str,
                      limit: int | None, val_fraction: float, seed: int, user: str = "") -> BuildReport:
    report = BuildReport("swe")
    image_reference(template, "check__template-1")  # a bad template is the command's error, not every row's

    def one(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            task = RepoTask.from_row(row)
        except InvalidTask as exc:
            raise Drop("invalid task row", str(exc)) from exc
        return image_row(task, image_reference(template, task.instance_id), python, workdir, cache, user), task.to_row()

    pairs = list(convert(report, read_rows(source, limit=limit), one, "swe"))
    report = _write(report, pairs, out, val_fraction, seed)
    images = sorted({row["extra_info"]["image"] for row, _ in pairs})
    (out / "images.txt").write_text("".join(f"{ref}\n" for ref in images))
    report.outputs.append(str(out / "images.txt"))
    report.save(out)
    return report


def _write(report: BuildReport, pairs: list[tuple[dict[str, Any], dict[str, Any]]], out: Path, val_fraction: float,
           seed: int) -> BuildReport:
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
