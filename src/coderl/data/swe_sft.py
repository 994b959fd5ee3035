"""`coderl data swe-sft`: SFT warm-up rows for agentic RL, recorded from REAL gold episodes.

A tiny model must first learn the harness's own turn format before GRPO can find any reward.
The format is whatever the stock harness really sends: mini-swe-agent's system prompt, its
instance template around the task, its tool schema, its observation messages, the chat template
of the model. Rather than re-create any of that, each row is recorded: the harness of the
agent-loop YAML (the command RL runs, by default the stock ``mini``) runs in a session sandbox
over the task's snapshot, its model calls go to coderl's gateway, and the gateway's model is a
script (`coderl.data.swe_gold_turns`) whose turns apply the task's gold patch and submit. The
row's messages are the gateway's session log as rendered to the model (assistant turns as the
raw text sampled, everything else as the harness sent it), so the SFT render of a row is, token
for token, what the gateway fed the model at every turn (checked per row here, and in
tests/data/test_swe_sft.py through verl's own SFT dataset).

Each episode must follow its script (every scripted turn used, no drift) and its diff must be
graded ``resolved``; any other episode is a counted drop, never a row. ``report.json`` also holds
the episodes' token counts with the given tokenizer (the lengths SFT and RL must be configured
for). Rows are for TRAIN tasks (``--split train``): held-out tasks are for evaluation only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from coderl.data.common import BuildReport, Drop, read_rows, seeded_split, write_parquet
from coderl.data.sft import load_chat_tokenizer
from coderl.data.swe import prompt_of
from coderl.data.swe_gold_turns import SUBMIT, FileFix, gold_turns, turn
from coderl.errors import BadRequest, RepoUnavailable
from coderl.swe.patch import split_diff
from coderl.swe.store import RepoStore, git
from coderl.swe.task import RepoTask
from coderl.swe.task_ref import AGENT_NAME

DEFAULT_AGENT_LOOPS = Path(__file__).resolve().parents[3] / "tool_config" / "agent_loop.yaml"
LOOP_NAME = AGENT_NAME
MODEL_NAME = "coderl-policy"  # what the harness asks the gateway for, as in the agent loop


@dataclass(frozen=True)
class Harness:
    """The harness command and what it needs, as the agent-loop YAML gives them to RL."""

    command: str
    binds: tuple[str, ...] = ()
    env: dict[str, str] | None = None

    @classmethod
    def from_agent_loops(cls, path: str | Path, name: str = LOOP_NAME) -> Harness:
        """The entry ``name`` of an agent-loop YAML, its ``${oc.env:...}`` resolved here as each
        Ray worker resolves them, so SFT records the very harness that RL runs."""
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException

        path = Path(path)
        if not path.is_file():
            raise BadRequest(f"agent-loop YAML {path}: no such file (name one with --agent-loops)")
        try:
            entries = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
        except (OmegaConfBaseException, ValueError) as exc:
            raise BadRequest(f"agent-loop YAML {path}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
        entry = next((e for e in entries or [] if isinstance(e, dict) and e.get("name") == name), None)
        if entry is None or not entry.get("command"):
            raise BadRequest(f"agent-loop YAML {path}: no entry {name!r} with a command")
        return cls(str(entry["command"]), tuple(str(b) for b in entry.get("harness_binds") or ()),
                   {str(k): str(v) for k, v in (entry.get("env") or {}).items()})


@dataclass
class GoldEpisode:
    """One recorded episode: its SFT row and the gateway's token record of it (final branch)."""

    row: dict[str, Any]
    ids: list[int]
    mask: list[int]
    prompt_len: int


def load_tasks(tasks: str, out: Path, repos: str | None, split: str | None) -> tuple[list[RepoTask], Path]:
    """``builtin`` (coderl's own set, built under ``out/builtin``: its train split, the only one
    SFT may see) or a tasks.jsonl with its ``repos`` directory."""
    if split is not None and tasks != "builtin":
        raise BadRequest("--split selects among the builtin tasks: use it with --tasks builtin")
    if tasks == "builtin":
        from coderl.swe.task_set import build_task_set

        if split == "heldout":
            raise BadRequest("held-out tasks are for evaluation only: SFT rows come from --split train")
        return build_task_set(out / "builtin", split or "train"), (out / "builtin" / "repos").resolve()
    if not repos or not Path(repos).is_dir():
        raise BadRequest("--repos must name the directory of git mirrors or tarballs the tasks come from")
    return [RepoTask.from_row(r) for r in read_rows(tasks)], Path(repos).resolve()


def file_fixes(snapshot: Path, gold_patch: str) -> list[FileFix]:
    """Each file of the gold patch, before and after (the patch applied to a scratch copy)."""
    paths = sorted({p for fp in split_diff(gold_patch) for p in fp.paths})
    with tempfile.TemporaryDirectory(prefix="coderl-gold-") as tmp:
        work = Path(tmp) / "repo"
        shutil.copytree(snapshot, work, symlinks=True)
        (Path(tmp) / "gold.diff").write_text(gold_patch)
        git("apply", str(Path(tmp) / "gold.diff"), cwd=work)
        before = {p: (snapshot / p).read_text() if (snapshot / p).is_file() else "" for p in paths}
        return [FileFix(p, before[p], (work / p).read_text()) for p in paths if (work / p).is_file()]


def verifying_tests(snapshot: Path, task: RepoTask, most: int = 5) -> tuple[str, ...]:
    """The tests a gold episode runs to check its fix: ones the agent's tree holds as the grader
    runs them. A real row's FAIL_TO_PASS tests come with its test patch, which the agent never sees
    (the grader applies it): new ones are not in the tree, changed ones still assert the old
    behaviour. Then up to ``most`` PASS_TO_PASS tests of the same files that the tree defines
    (none: the episode runs no tests)."""
    patched = {p for fp in split_diff(task.test_patch) for p in fp.paths} if task.test_patch.strip() else set()
    files = {t.split("::", 1)[0] for t in task.fail_to_pass}
    if not files & patched and all(_defined(snapshot, t) for t in task.fail_to_pass):
        return task.fail_to_pass
    return tuple([t for t in task.pass_to_pass if t.split("::", 1)[0] in files and _defined(snapshot, t)][:most])


def _defined(snapshot: Path, test_id: str) -> bool:
    """Whether the file of ``path::[Class::]name[params]`` defines ``name`` (a text match: the
    tree is not imported outside the sandbox)."""
    path, _, rest = test_id.partition("::")
    name = rest.rsplit("::", 1)[-1].split("[", 1)[0]
    file = snapshot / path
    return bool(name) and file.is_file() and re.search(
        rf"^\s*(?:async\s+)?def {re.escape(name)}\(", file.read_text(errors="replace"), re.M) is not None


class _Scripts:
    """The gateway's backend: each session plays its own script (a ReplayBackend per session)."""

    def __init__(self) -> None:
        self.by_session: dict[str, Any] = {}

    async def generate(self, prompt_ids: list[int], max_tokens: int, sampling: dict[str, Any], request_id: str) -> Any:
        return await self.by_session[request_id].generate(prompt_ids, max_tokens, sampling, request_id)


class GoldRecorder:
    """Runs gold episodes: one gateway (unix socket) and one session host for all of them."""

    def __init__(self, tokenizer: Any, harness: Harness, store: RepoStore, cache_dir: Path, *,
                 timeout_s: float = 300.0, find_links: Path | None = None) -> None:
        from coderl.gateway.chat import ChatFormat

        self.tokenizer, self.harness, self.store, self.cache_dir = tokenizer, harness, store, cache_dir
        self.timeout_s, self.find_links = timeout_s, find_links
        self.fmt = ChatFormat(tokenizer)
        self.scripts = _Scripts()

    @contextlib.asynccontextmanager
    async def running(self) -> Any:
        from coderl.gateway.core import Gateway
        from coderl.gateway.server import serve
        from coderl.sandbox.session import SessionHost
        from coderl.swe.grader import RepoGrader

        socket_dir = Path(tempfile.mkdtemp(prefix="coderl-gold-gw-"))
        socket_dir.chmod(0o755)  # the sandbox's unprivileged uid connects to the socket inside
        self.gateway = Gateway(self.fmt, self.scripts, model_name=MODEL_NAME)
        self.socket = str(socket_dir / "gateway.sock")
        served = await serve(self.gateway, [f"unix:{self.socket}"])
        try:
            async with SessionHost() as host:
                self.host = host
                self.grader = RepoGrader(host, self.store, env_cache=self.cache_dir, find_links=self.find_links)
                yield self
        finally:
            await served.stop()
            shutil.rmtree(socket_dir, ignore_errors=True)

    async def episode(self, task: RepoTask, variant: int) -> GoldEpisode:
        """One gold episode of ``task`` (raises Drop when it is not a clean, resolving one)."""
        from coderl.gateway.backends import ReplayBackend
        from coderl.gateway.core import SessionConfig
        from coderl.swe.harness import run_in_sandbox

        if not task.gold_patch.strip():
            raise Drop("task has no gold patch", task.instance_id)
        snapshot, env = await self.grader.prepare(task)
        try:
            fixes = await asyncio.to_thread(file_fixes, snapshot, task.gold_patch)
        except RepoUnavailable as exc:
            raise Drop("the gold patch does not apply", f"{task.instance_id}: {exc}") from None
        script = gold_turns(fixes, verifying_tests(snapshot, task), variant)
        sid = f"gold-{uuid.uuid4().hex}"
        # past the script's end (the harness asked again: it did not take a turn as meant) submit
        self.scripts.by_session[sid] = ReplayBackend(script, self.tokenizer, self.fmt.stop_ids,
                                                     fallback=turn("Submitting.", SUBMIT))
        self.gateway.open(sid, SessionConfig(max_context=1 << 20, timeout_s=self.timeout_s + 60))
        try:
            result = await run_in_sandbox(self.harness.command, host=self.host, repo_dir=snapshot,
                                          task=prompt_of(task)[0]["content"], gateway_socket=self.socket,
                                          session_id=sid, model=MODEL_NAME, timeout_s=self.timeout_s,
                                          harness_binds=self.harness.binds, env_dir=env, env=self.harness.env,
                                          capture_diff=True)
        finally:
            session = await self.gateway.close(sid)
            del self.scripts.by_session[sid]
        where = f"{task.instance_id} variant {variant}"
        if result.timed_out or session.turns != len(script) or session.trajectory.drifts:
            raise Drop("the harness did not follow the script",
                       f"{where}: {session.turns} of {len(script)} turns, {session.trajectory.drifts} drifts, exit "
                       f"{result.exit_code}, timed out {result.timed_out}: {result.output_tail[-300:]}")
        graded = await self.grader.grade(task, result.diff or "")
        if graded.status != "resolved":
            raise Drop("the gold episode did not resolve the task", f"{where}: {graded.status} {graded.message}")
        branch = session.trajectory.final()
        row = {"messages": [{"role": e["render"]["role"], "content": e["render"]["content"]} for e in session.log],
               "tools": session.tools or [],
               "extra_info": {"instance_id": task.instance_id, "variant": variant, "turns": session.turns,
                              "tokens": len(branch.ids), "prompt_tokens": branch.prompt_len}}
        if not renders_as_recorded(self.tokenizer, row, branch.ids):
            raise Drop("the row does not render to the gateway's tokens", where)
        return GoldEpisode(row, list(branch.ids), list(branch.mask), branch.prompt_len)


def renders_as_recorded(tokenizer: Any, row: dict[str, Any], ids: list[int]) -> bool:
    """Whether the chat template renders the row to the recorded ids, plus only the template's
    closing glue after the last sampled turn (the newline after ``<|im_end|>``)."""
    text = tokenizer.apply_chat_template(row["messages"], tools=row["tools"] or None, tokenize=False)
    full = tokenizer.encode(text, add_special_tokens=False)
    return full[: len(ids)] == ids and not tokenizer.decode(full[len(ids):]).strip()


async def record_gold_episodes(recorder: GoldRecorder, runs: list[tuple[RepoTask, int]], *,
                               concurrency: int = 2) -> list[GoldEpisode | Drop]:
    """The (task, variant) episodes, ``concurrency`` at a time; a Drop stands for a failed one."""
    gate = asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(runs), desc="gold episodes", unit=" episodes",
               disable=os.environ.get("CODERL_NO_PROGRESS") == "1")

    async def one(task: RepoTask, variant: int) -> GoldEpisode | Drop:
        async with gate:
            try:
                return await recorder.episode(task, variant)
            except Drop as drop:
                return drop
            finally:
                bar.update(1)

    async with recorder.running():
        try:
            return list(await asyncio.gather(*(one(t, v) for t, v in runs)))
        finally:
            bar.close()


def token_stats(episodes: list[GoldEpisode]) -> dict[str, Any]:
    """What SFT's max_length and RL's prompt/response lengths must cover, in this tokenizer."""
    total = [len(e.ids) for e in episodes]
    prompt = [e.prompt_len for e in episodes]
    response = [len(e.ids) - e.prompt_len for e in episodes]
    sampled = [sum(e.mask) for e in episodes]
    return {name: {"max": max(v), "mean": round(statistics.fmean(v), 1), "min": min(v)}
            for name, v in (("episode_tokens", total), ("first_prompt_tokens", prompt),
                            ("response_tokens", response), ("sampled_tokens", sampled))}


def build_swe_sft(tasks: str, out_dir: str | Path, *, repos: str | None = None, split: str | None = None,
                  variants: int = 4, tokenizer_path: str | None = None, agent_loops: str | Path | None = None,
                  cache_dir: str | Path, val_fraction: float = 0.1, seed: int = 42,
                  concurrency: int = 2, timeout_s: float = 300.0, limit: int | None = None,
                  find_links: str | Path | None = None) -> tuple[BuildReport, dict[str, Any]]:
    """Write train.parquet / validation.parquet (``messages``, ``tools``, ``extra_info``) and
    report.json (with ``tokens``) under ``out_dir``; the report and the token counts."""
    if variants < 1:
        raise BadRequest("--variants must be at least 1")
    out, cache = Path(out_dir), Path(cache_dir).resolve()
    harness = Harness.from_agent_loops(agent_loops or DEFAULT_AGENT_LOOPS)
    task_list, repos_dir = load_tasks(tasks, out, repos, split)
    task_list = task_list[:limit] if limit else task_list
    if not task_list:
        raise BadRequest(f"{tasks}: no tasks")
    tokenizer = load_chat_tokenizer(tokenizer_path)
    recorder = GoldRecorder(tokenizer, harness, RepoStore(repos_dir, cache), cache, timeout_s=timeout_s,
                            find_links=Path(find_links) if find_links else None)
    runs = [(task, variant) for task in task_list for variant in range(variants)]
    results = asyncio.run(record_gold_episodes(recorder, runs, concurrency=concurrency))
    report = BuildReport("swe-sft", read=len(results))
    episodes = [r for r in results if isinstance(r, GoldEpisode)]
    for drop in (r for r in results if isinstance(r, Drop)):
        report.drop(drop.reason, drop.detail)
    report.kept = len(episodes)
    report.check_nonempty()
    train, val = seeded_split([e.row for e in episodes], val_fraction, seed)
    for name, rows in (("train", train), ("validation", val)):
        if rows:
            report.outputs.append(write_parquet(rows, out / f"{name}.parquet"))
    stats = token_stats(episodes)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps({**report.to_dict(), "tokens": stats,
                                                 "tokenizer": tokenizer.name_or_path}, indent=2, sort_keys=True))
    return report, stats
