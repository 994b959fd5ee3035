"""`coderl eval harbor`: the reward of Harbor tasks for the oracle, for doing nothing, or for a served model.

``--oracle`` runs each task's ``solution/solve.sh`` in the agent's place and grades the container it
left (the gate every task must pass: reward 1); ``--empty`` grades the pristine image (the gate the
other way: reward 0); ``--harness`` runs an agent command in an image-backed session whose one way
out is the gateway's unix socket (``--gateway-socket``) and grades the container it left.
``--workdir-only`` grades only the work dir's diff on the pristine image (``coderl.swe.harbor_grader``).
A task whose image or episode sandbox fails is that task's ``sandbox_error``; the run goes on. Every task graded is
appended to ``results.jsonl`` at once; a second run on the same ``--out`` keeps finished tasks and
tries ``sandbox_error`` ones again. Summary as `coderl eval swe`'s (resolved = reward >= 1), plus
the mean reward over the tasks scored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coderl.data.common import read_rows
from coderl.data.harbor import task_dirs
from coderl.errors import BadRequest, DiffUnavailable, InvalidTask, SandboxError
from coderl.eval.swe import markdown, summarize
from coderl.sandbox.session import SessionHost
from coderl.swe.episodes import LocalEpisodes
from coderl.swe.grade_status import GradeStatus
from coderl.swe.harbor import HarborTask
from coderl.swe.harbor_grader import Episode
from coderl.swe.task_ref import TaskRef


@dataclass(frozen=True)
class HarborEvalConfig:
    tasks: tuple[str, ...]
    out_dir: str
    cache_dir: Path
    oracle: bool = False
    empty: bool = False
    harness: str | None = None
    gateway_socket: str | None = None
    harness_binds: tuple[str, ...] = ()
    harness_timeout_s: float | None = None
    model: str = "coderl-policy"
    concurrency: int = 2
    workdir_only: bool = False


def load_tasks(sources: tuple[str, ...]) -> list[HarborTask]:
    """Task directories (or directories of them), a tasks.jsonl, or a `coderl data harbor` output dir."""
    tasks: list[HarborTask] = []
    for source in sources:
        path = Path(source)
        listing = path / "tasks.jsonl" if path.is_dir() and (path / "tasks.jsonl").is_file() else path
        if listing.is_file():
            tasks += [HarborTask.from_row(row) for row in read_rows(listing)]
        else:
            tasks += [HarborTask.from_dir(d) for d in task_dirs([path])]
    if not tasks:
        raise BadRequest(f"{' '.join(sources)}: no Harbor tasks")
    return tasks


async def evaluate_harbor(cfg: HarborEvalConfig) -> dict[str, Any]:
    if sum(bool(x) for x in (cfg.oracle, cfg.empty, cfg.harness)) != 1:
        raise BadRequest("give exactly one of --oracle, --empty or --harness")
    if cfg.harness and not cfg.gateway_socket:
        raise BadRequest("--harness needs --gateway-socket (a `coderl gateway --auto-session` unix listener)")
    tasks = [replace(t, workdir_only=True) if cfg.workdir_only else t for t in load_tasks(cfg.tasks)]
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.jsonl"
    done = _finished(results_path)
    gate = asyncio.Semaphore(cfg.concurrency)
    async with SessionHost() as host:
        episodes = LocalEpisodes(host, cache=cfg.cache_dir, concurrency=cfg.concurrency,
                                 gateway_socket=cfg.gateway_socket or "")

        async def one(task: HarborTask) -> None:
            async with gate:
                ref = TaskRef.of_harbor(task, cache_dir=cfg.cache_dir)
                try:
                    episode, extra = await _episode(cfg, episodes, ref)
                except (SandboxError, InvalidTask, DiffUnavailable) as exc:  # the task's image or our sandbox: this task's error only
                    episode, extra = None, {"status": GradeStatus.SANDBOX_ERROR.value, "reward": None, "resolved": False,
                                            "message": f"the episode could not run: {exc}"}
                try:
                    graded = (await episodes.grade(ref, episode.diff, episode.state)).to_dict() if episode else {}
                finally:
                    if episode is not None:
                        episode.remove()
                record = {**graded, **extra, "name": task.name, "instance_id": task.name,
                          "patch": episode.diff if episode else ""}
            with results_path.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            done[task.name] = record

        await asyncio.gather(*(one(t) for t in tasks if t.name not in done))
    records = [done[t.name] for t in tasks if t.name in done]
    scored = [float(r["reward"]) for r in records if r.get("reward") is not None]
    summary = {**summarize(records), "mean_reward": sum(scored) / len(scored) if scored else None}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    (out / "summary.md").write_text(markdown(summary) + "\n")
    return summary



async def _episode(cfg: HarborEvalConfig, episodes: LocalEpisodes, ref: TaskRef) -> tuple[Episode, dict[str, Any]]:
    """The run's episode on the task (the oracle's, none, or the harness's) and what the record adds."""
    if cfg.oracle:
        return await episodes.runner(ref).oracle(ref.harbor_task()), {}
    if cfg.empty:  # the container as the image has it: an empty state is the pristine image
        return Episode(""), {}
    assert cfg.harness is not None and cfg.gateway_socket is not None
    result = await episodes.run_harness(ref, cfg.harness, task=ref.harbor_task().instruction,
                                        session_id=f"harbor-{uuid.uuid4().hex}", model=cfg.model,
                                        timeout_s=cfg.harness_timeout_s, harness_binds=cfg.harness_binds)
    return Episode(result.diff or "", result.state), {
        "agent_exit_code": result.exit_code, "agent_timed_out": result.timed_out,
        **({"agent_message": result.diff_error} if result.diff_error else {})}


def _finished(path: Path) -> dict[str, dict[str, Any]]:
    """The tasks a previous run on this --out graded (a sandbox error is tried again; a line an
    interrupted run cut short is skipped)."""
    done: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines() if path.is_file() else []:
        with contextlib.suppress(json.JSONDecodeError):
            record = json.loads(line)
            if record.get("status") != GradeStatus.SANDBOX_ERROR:
                done[record["instance_id"]] = record
    return done


def add_parser(sub: Any) -> None:
    """``coderl eval harbor`` (registered by `coderl.eval.cli`)."""
    p = sub.add_parser("harbor", help="reward of Harbor tasks for the oracle, no change, or a served model",
                       description="Grade each task in a fresh sandbox from its image (tests/test.sh writes the "
                                   "reward); write results.jsonl, summary.json and summary.md to --out. Run again on "
                                   "the same --out to resume. Exit 1 when sandbox errors are left unscored.")
    p.add_argument("tasks", nargs="+", metavar="TASKS",
                   help="Harbor task directories (or directories of them), a tasks.jsonl, or a `coderl data harbor` dir")
    p.add_argument("--out", required=True, help="output directory (resumable)")
    p.add_argument("--oracle", action="store_true", help="run each task's solution/solve.sh (the gate: reward 1)")
    p.add_argument("--empty", action="store_true", help="grade no change at all (the gate: reward 0)")
    p.add_argument("--harness", help="agent command run per task in an image-backed session (needs --gateway-socket)")
    p.add_argument("--gateway-socket", help="unix socket of a `coderl gateway --auto-session` serving the model")
    p.add_argument("--harness-bind", action="append", default=[], help="host path the harness needs, read-only")
    p.add_argument("--harness-timeout", type=float, help="seconds per episode (default: the task's [agent] timeout_sec)")
    p.add_argument("--model", default="coderl-policy", help="model name the harness asks the gateway for")
    p.add_argument("--workdir-only", action="store_true",
                   help="grade only the work dir's diff on the pristine image (default: the container the episode left)")
    p.add_argument("--concurrency", type=int, default=2, help="tasks at once (default 2)")
    p.add_argument("--cache", help="unpacked images (default: $CODERL_CACHE or ~/.cache/coderl)")
    p.set_defaults(func=_main)


def _main(args: Any) -> int:
    from coderl.cache import default_cache_dir
    from coderl.eval.swe import exit_code

    cfg = HarborEvalConfig(tasks=tuple(args.tasks), out_dir=args.out,
                           cache_dir=Path(args.cache) if args.cache else default_cache_dir(), oracle=args.oracle,
                           empty=args.empty, harness=args.harness, gateway_socket=args.gateway_socket,
                           harness_binds=tuple(args.harness_bind), harness_timeout_s=args.harness_timeout,
                           model=args.model, concurrency=max(1, args.concurrency), workdir_only=args.workdir_only)
    summary = asyncio.run(evaluate_harbor(cfg))
    print(markdown(summary) + f"\nmean reward: {summary['mean_reward']}")
    return exit_code(summary)
