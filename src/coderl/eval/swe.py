"""`coderl eval swe`: the resolved rate of a task set, for a file of patches or for a served model.

Patches: a JSONL of SWE-bench predictions (``instance_id`` with ``model_patch`` or ``patch``), or
``--gold`` (each task's own fix: the grader's self-test, which must come out 100%). A task
without a prediction is ``no_patch`` (unresolved, as SWE-bench counts it).

A served model: ``--harness`` is an agent command (`coderl.swe.harness` placeholders) run in a
session sandbox over the task's snapshot, whose one way out is the gateway's unix socket
(``--gateway-socket``, a `coderl gateway --auto-session` listener); its diff is then graded. With
``--sessions-url`` the sandboxes are a session service's (``coderl serve`` on a sandbox node,
started with the same repositories as ``CODERL_SWE_REPOS``), which also grades; the node reaches
the gateway at ``--gateway-url`` (its TCP listener).

With ``--image TEMPLATE`` (as `coderl data swe --image`) each task's environment is its image
(SWE-bench's, SWE-Gym's, ...): no ``--repos``; episodes run and diffs are graded in the image
(`coderl.swe.episodes`), here or on the service (which must hold the images: `coderl images pull`).

Every graded task is appended to ``results.jsonl`` at once (with the diff), so a second run on the
same ``--out`` resumes: finished tasks are kept, ``sandbox_error`` ones are tried again. The rate
is resolved / (tasks - sandbox errors), with the errors counted beside it, never as failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from coderl.data.common import read_rows
from coderl.errors import BadRequest
from coderl.sandbox.session import SessionHost
from coderl.swe.episodes import Episodes, LocalEpisodes, RemoteEpisodes
from coderl.swe.grade_status import GradeStatus
from coderl.swe.task import RepoTask
from coderl.swe.task_ref import ImageRef, TaskRef


@dataclass(frozen=True)
class SweEvalConfig:
    tasks: str
    out_dir: str
    cache_dir: Path
    repos: str | None = None
    patches: str | None = None
    gold: bool = False
    harness: str | None = None
    gateway_socket: str | None = None
    harness_binds: tuple[str, ...] = ()
    harness_timeout_s: float = 1800.0
    model: str = "coderl-policy"
    sandbox_url: str | None = None
    sessions_url: str | None = None  # the harness's sessions (and the grading) on a session service
    gateway_url: str | None = None  # with sessions_url: the gateway as that service's node reaches it
    concurrency: int = 2
    find_links: Path | None = None
    limit: int | None = None
    split: str | None = None  # builtin tasks only: train or heldout
    image: str | None = None  # a reference template: each task's environment is its image (no repos)
    image_python: str = "python3"
    workdir: str = "/testbed"
    image_user: str = ""  # '' = the image's User
    labels: str = "row"  # row: the lists each row carries (a gate's, relabelled or not); official: SWE-bench's

    def task_ref(self, task: RepoTask, repos: Path | None = None) -> TaskRef:
        """The task's reference: in its image with --image (as `coderl data swe --image` writes it),
        else its snapshot from ``repos``."""
        from coderl.data.swe import image_reference

        if self.image is None:
            return TaskRef.of_repo_task(task, repos_dir=repos or "", cache_dir=self.cache_dir)
        image = ImageRef(image_reference(self.image, task.instance_id), self.image_python, self.workdir, self.image_user)
        return TaskRef.of_repo_task(task, image=image, cache_dir=self.cache_dir)


LABELS = ("row", "official")


def official_labels(row: dict[str, Any]) -> dict[str, Any]:
    """The row with SWE-bench's own FAIL_TO_PASS and PASS_TO_PASS where `coderl eval swe-gate`
    changed them (its kept rows carry them as ``gate.official``: drifted, flaky or network tests
    dropped, tests relabelled), for official-label numbers; any other row as it is."""
    gate = row.get("gate")
    official = gate.get("official") if isinstance(gate, dict) else None
    if not isinstance(official, dict):
        return row
    return {**row, **{k: official[k] for k in ("FAIL_TO_PASS", "PASS_TO_PASS") if k in official}}


def load_tasks(cfg: SweEvalConfig) -> tuple[list[RepoTask], Path | None]:
    """The tasks and the repositories directory (``builtin``: coderl's own set, built under --out;
    None with --image: the images hold the repositories)."""
    source, repos = cfg.tasks, cfg.repos
    if cfg.split is not None and source != "builtin":
        raise BadRequest("--split selects among the builtin tasks: use it with --tasks builtin")
    if source == "builtin":
        from coderl.swe.task_set import build_task_set

        built = Path(cfg.out_dir) / "builtin"
        build_task_set(built, cfg.split)
        source, repos = str(built / "tasks.jsonl"), str(built / "repos")
    elif Path(source).is_dir() and (Path(source) / "tasks.jsonl").is_file():
        source = str(Path(source) / "tasks.jsonl")  # a `coderl data swe` output directory
    if cfg.image is not None:
        if repos or cfg.split is not None:
            raise BadRequest("--image: each task's image holds its repository: no --repos, no --tasks builtin")
    elif not repos or not Path(repos).is_dir():
        raise BadRequest("--repos must name the directory of git mirrors or tarballs the tasks come from")
    if cfg.labels not in LABELS:
        raise BadRequest(f"--labels {cfg.labels!r}: one of {', '.join(LABELS)}")
    rows = read_rows(source, limit=cfg.limit)
    tasks = [RepoTask.from_row(official_labels(r) if cfg.labels == "official" else r) for r in rows]
    if not tasks:
        raise BadRequest(f"{cfg.tasks}: no tasks")
    if tasks and cfg.image is not None:
        cfg.task_ref(tasks[0])  # a bad template is the command's error, before any task runs
    return tasks, Path(repos).resolve() if repos else None


def load_patches(cfg: SweEvalConfig, tasks: list[RepoTask]) -> dict[str, str]:
    if cfg.gold:
        return {t.instance_id: t.gold_patch for t in tasks}
    assert cfg.patches is not None
    out = {}
    for row in read_rows(cfg.patches):
        if not isinstance(row, dict) or "instance_id" not in row:
            raise BadRequest(f"{cfg.patches}: every line needs an instance_id")
        out[str(row["instance_id"])] = str(row.get("model_patch") or row.get("patch") or "")
    return out


async def evaluate_swe(cfg: SweEvalConfig) -> dict[str, Any]:
    modes = sum(bool(x) for x in (cfg.patches, cfg.gold, cfg.harness))
    if modes != 1:
        raise BadRequest("give exactly one of --patches, --gold or --harness")
    if cfg.harness and not cfg.sessions_url and not cfg.gateway_socket:
        raise BadRequest("--harness needs --gateway-socket (a `coderl gateway --auto-session` unix listener)")
    if cfg.sessions_url and cfg.harness and not cfg.gateway_url:
        raise BadRequest("--sessions-url with --harness needs --gateway-url (the gateway's TCP listener as the "
                         "session service's node reaches it)")
    if cfg.harness and cfg.sandbox_url:
        raise BadRequest("--harness runs its sessions on this machine: drop --sandbox-url (or use --sessions-url)")
    tasks, repos = load_tasks(cfg)
    patches = None if cfg.harness else load_patches(cfg, tasks)
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.jsonl"
    done = {r["instance_id"]: r for r in read_records(results_path) if r.get("status") != GradeStatus.SANDBOX_ERROR}
    todo = [t for t in tasks if t.instance_id not in done]
    bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), desc="swe", unit=" tasks")
    gate = asyncio.Semaphore(cfg.concurrency)
    async with contextlib.AsyncExitStack() as stack:
        episodes = await _episodes(cfg, repos, stack)

        async def one(task: RepoTask) -> None:
            async with gate:
                ref = cfg.task_ref(task, repos)
                if patches is not None:
                    diff, extra = patches.get(task.instance_id), {}
                else:
                    diff, extra = await _run_agent(cfg, episodes, ref)
                if diff is None:
                    record = {"instance_id": task.instance_id, "status": GradeStatus.NO_PATCH,
                              "reward": GradeStatus.NO_PATCH.reward, "resolved": False}
                else:
                    record = (await episodes.grade(ref, diff)).to_dict()
                record = {**record, **extra, "patch": diff}
            with results_path.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            done[task.instance_id] = record
            bar.update(1)

        try:
            await asyncio.gather(*(one(t) for t in todo))
        finally:
            bar.close()
            await episodes.aclose()
    summary = summarize([done[t.instance_id] for t in tasks if t.instance_id in done])
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    (out / "summary.md").write_text(markdown(summary) + "\n")
    return summary


async def _episodes(cfg: SweEvalConfig, repos: Path | None, stack: contextlib.AsyncExitStack) -> Episodes:
    """Where the run's episodes run and are graded, chosen once: a service (``--sandbox-url``: it
    grades; ``--sessions-url``: its sessions too), else this machine's sandbox."""
    if cfg.sandbox_url or cfg.sessions_url:  # the service grades: no sandbox on this machine
        from coderl.client import SandboxClient, SessionService

        client = SandboxClient((cfg.sandbox_url or cfg.sessions_url or "").split(","), timeout_s=3600.0)
        sessions = SessionService(cfg.sessions_url) if cfg.sessions_url else None
        return RemoteEpisodes(sessions, client, gateway_url=cfg.gateway_url or "")
    host = await stack.enter_async_context(SessionHost())
    return LocalEpisodes(host, repos=repos, cache=cfg.cache_dir, find_links=cfg.find_links,
                         concurrency=cfg.concurrency, gateway_socket=cfg.gateway_socket or "")


async def _run_agent(cfg: SweEvalConfig, episodes: Episodes, ref: TaskRef) -> tuple[str | None, dict[str, Any]]:
    """The harness on the task in a session sandbox (in its image with --image), here or on the
    session service; its diff (None when its files make none: graded ``no_patch``, with the reason
    as ``agent_message``)."""
    from coderl.data.swe import prompt_of

    assert cfg.harness is not None and ref.task is not None
    prompt = prompt_of(ref.task, cfg.workdir if ref.image else "/repo")[0]["content"]
    result = await episodes.run_harness(ref, cfg.harness, task=prompt, session_id=f"swe-{uuid.uuid4().hex}",
                                        model=cfg.model, timeout_s=cfg.harness_timeout_s,
                                        harness_binds=cfg.harness_binds)
    extra = {"agent_exit_code": result.exit_code, "agent_timed_out": result.timed_out}
    if result.diff_error is not None:
        extra["agent_message"] = result.diff_error
    return result.diff, extra


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    statuses = Counter(r.get("status", "error") for r in records)
    errors = statuses.get(GradeStatus.SANDBOX_ERROR, 0) + sum(1 for r in records if "error" in r and "status" not in r)
    scored = len(records) - errors
    resolved = statuses.get(GradeStatus.RESOLVED, 0)
    return {"tasks": len(records), "resolved": resolved, "sandbox_errors": errors,
            "resolved_rate": resolved / scored if scored else None, "statuses": dict(statuses),
            "tests_touched": sum(1 for r in records if r.get("tests_touched"))}


def markdown(summary: dict[str, Any]) -> str:
    rate = summary["resolved_rate"]
    lines = ["| tasks | resolved | resolved rate | sandbox errors | diffs touching tests |", "|---|---|---|---|---|",
             f"| {summary['tasks']} | {summary['resolved']} | {'n/a' if rate is None else f'{100 * rate:.1f}%'} "
             f"| {summary['sandbox_errors']} | {summary['tests_touched']} |"]
    lines.append("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items())))
    return "\n".join(lines)


def exit_code(summary: dict[str, Any]) -> int:
    """1 while sandbox errors are left unscored (run again to retry them)."""
    return 1 if summary["sandbox_errors"] else 0


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a resumable run's log (a line an interrupted run cut is skipped)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by an interrupted run
            continue
    return out

