"""`coderl eval lcb`: generate (or read) n responses per LiveCodeBench problem, score them on the
same sandbox and judge the reward uses (`scoring.py`, which states the sandbox-error policy), and
write ``samples.jsonl`` (one record per sample, appended as soon as it is scored) plus
``summary.json`` and ``summary.md``.

Resumable: a run over an existing output directory skips every scored sample and judges the
sandbox errors again from their stored responses, so an interrupted evaluation loses at most the
samples in flight.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from coderl.errors import BadRequest
from coderl.eval.backends import Completion, Item, Sampling
from coderl.eval.scoring import Scorer
from coderl.eval.summary import markdown, summarise


@dataclass
class EvalConfig:
    problems: str
    out_dir: str
    sampling: Sampling = field(default_factory=Sampling)
    backend: str = "openai"  # openai | vllm | responses
    base_url: str | None = None
    model: str | None = None
    responses: str | None = None
    sandbox_url: str | None = None  # None: an in-process engine
    tools: bool = False
    max_turns: int = 16
    concurrency: int | None = None  # requests in flight (openai) or samples per batch (vllm, responses)
    tensor_parallel_size: int = 1
    limit: int | None = None
    cpu_s: float = 6.0  # LiveCodeBench's per-test timeout
    memory_mb: int = 1024
    extraction: str = "lcb"  # lcb (LiveCodeBench's rule) | coderl (the reward's, with fallbacks)
    start_date: str | None = None  # an inclusive contest-date window; raw rows default to the recipe's
    end_date: str | None = None


def load_problems(path: str, limit: int | None = None, start_date: str | None = None,
                  end_date: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """problems.jsonl from `coderl data lcb` (with its meta.json: release and window), or raw
    LiveCodeBench rows. A date window (inclusive, as LiveCodeBench compares) filters either; raw rows
    get the recipe's (2024-08-01..2025-02-01) unless one is given, since a raw file holds every date
    of its release and an unfiltered pass@1 is not comparable with anything. ``limit`` counts
    problems inside the window."""
    from datetime import datetime

    from coderl.data.common import Drop, read_rows
    from coderl.data.lcb import DEFAULT_END, DEFAULT_START, lcb_row, parse_date
    from coderl.judge.formats import to_spec

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"problems not found: {path} (build them with `coderl data lcb`)")
    source = p / "problems.jsonl" if p.is_dir() else p
    meta_file = source.parent / "meta.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    def bounds_of(window: tuple[str | None, str | None]) -> tuple[datetime, datetime]:
        return (parse_date(window[0], "--start-date") if window[0] else datetime.min,
                parse_date(window[1], "--end-date") if window[1] else datetime.max)

    window = (start_date, end_date) if start_date or end_date else None
    bounds = bounds_of(window) if window else None  # a bad date fails before any row is read
    problems: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, row in enumerate(read_rows(source), 1):
        if limit is not None and len(problems) >= limit:
            break
        if not isinstance(row, dict) or "__malformed__" in row:
            raise BadRequest(f"{source}:{n}: not a JSON object")
        try:
            if "tests" not in row:  # a raw LiveCodeBench row
                if bounds is None:
                    window = (DEFAULT_START, DEFAULT_END)
                    bounds = bounds_of(window)
                try:
                    row = lcb_row(row, *bounds)
                except Drop as drop:
                    if drop.reason == "outside the date window":
                        continue
                    raise
            elif bounds and not bounds[0] <= datetime.fromisoformat(str(row.get("contest_date"))) <= bounds[1]:
                continue
            to_spec(row["tests"])  # unreadable tests fail here, not as sandbox errors later
            qid = str(row["question_id"])
            if not isinstance(row.get("prompt"), list):
                raise KeyError("prompt")
        except Drop as drop:
            raise BadRequest(f"{source}:{n}: {drop.reason} {drop.detail}".rstrip()) from None
        except (KeyError, TypeError) as exc:
            raise BadRequest(f"{source}:{n}: not a `coderl data lcb` problem (missing {exc})") from None
        except ValueError as exc:
            raise BadRequest(f"{source}:{n}: contest_date: {exc}") from None
        if qid in seen:
            raise BadRequest(f"{source}:{n}: duplicate question_id {qid}")
        seen.add(qid)
        problems.append(row)
    if not problems:
        raise BadRequest(f"{source}: no problems in it" + (f" from {window[0]} to {window[1]}" if window else ""))
    if window:
        meta = {**meta, "start_date": window[0], "end_date": window[1],
                "release": meta.get("release") or f"rows of {source.name}"}
    return problems, meta


async def evaluate(cfg: EvalConfig) -> dict[str, Any]:
    """Run (or resume) an evaluation; returns the summary, also written next to the samples."""
    if cfg.sampling.n is not None and cfg.sampling.n < 1:
        raise BadRequest("n must be at least 1")
    problems, meta = load_problems(cfg.problems, cfg.limit, cfg.start_date, cfg.end_date)
    n, sampling = cfg.sampling.n, cfg.sampling.to_dict()
    file_backend = _backend(cfg) if cfg.backend == "responses" else None
    if file_backend is not None:  # responses made elsewhere: no sampling settings of ours to report
        n, unmatched = file_backend.samples_per_problem(problems, n)
        sampling = {"n": n}
        if unmatched:
            tqdm.write(f"coderl: warning: {len(unmatched)} question_ids of {cfg.responses} are not among the "
                       f"problems and are ignored (e.g. {', '.join(unmatched[:3])})", file=sys.stderr)
    elif n is None:
        raise BadRequest(f"n is required with backend {cfg.backend}")
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _check_same_run(out / "run.json", cfg, sampling)
    samples_path = out / "samples.jsonl"
    latest = _latest_records(samples_path)
    keys = [(p, i) for p in problems for i in range(n)]
    rescore = [k for k in keys if latest.get(_key(k), {}).get("verdict") == "sandbox_error"]
    todo = [k for k in keys if _key(k) not in latest]
    backend = (file_backend or _backend(cfg)) if todo else None  # bad arguments fail here, before any work
    try:
        async with Scorer(cfg.sandbox_url, cpu_s=cfg.cpu_s, memory_mb=cfg.memory_mb, extraction=cfg.extraction) as scorer:
            generator = backend
            if cfg.tools and backend is not None:
                from coderl.eval.agent import ToolAgent

                generator = ToolAgent(backend, scorer, cfg.max_turns)
            with samples_path.open("a", encoding="utf-8") as sink, \
                    tqdm(total=len(rescore) + len(todo), desc="lcb", unit=" samples") as bar:

                async def finish(items: list[Item], generations: list[Completion]) -> None:
                    for rec in await scorer.score(items, generations):
                        sink.write(json.dumps(rec, ensure_ascii=False) + "\n")
                        latest[(rec["question_id"], rec["sample"])] = rec
                    sink.flush()
                    bar.update(len(items))

                async def one(item: Item) -> None:
                    await finish([item], await generator.generate([item]))

                for chunk in _chunks(rescore, 64):
                    await finish(chunk, [_stored(latest[_key(k)]) for k in chunk])
                if generator is not None and generator.per_sample:
                    await _all(one(k) for k in todo)
                elif generator is not None:
                    for chunk in _chunks(todo, cfg.concurrency or 512):
                        await finish(chunk, await generator.generate(chunk))
    finally:
        if backend is not None:
            await backend.aclose()
    records = [latest[_key(k)] for k in keys if _key(k) in latest]
    settings = {"release": meta.get("release"), "start_date": meta.get("start_date"), "end_date": meta.get("end_date"),
                "sampling": sampling, "backend": cfg.backend, "model": cfg.model, "tools": cfg.tools,
                "max_turns": cfg.max_turns if cfg.tools else None, "extraction": cfg.extraction,
                "limits": {"cpu_s_per_test": cfg.cpu_s, "memory_mb": cfg.memory_mb}}
    summary = summarise(problems, records, n, settings)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(markdown(summary))
    return summary


def _check_same_run(path: Path, cfg: EvalConfig, sampling: dict[str, Any]) -> None:
    """Resuming mixes samples from both runs, so the generation settings must match (n may grow)."""
    settings = {**{k: v for k, v in sampling.items() if k != "n"}, "model": cfg.model,
                "tools": cfg.tools, "max_turns": cfg.max_turns if cfg.tools else None, "extraction": cfg.extraction}
    if path.is_file():
        before = json.loads(path.read_text())
        changed = sorted(k for k in settings.keys() | before.keys() if settings.get(k) != before.get(k))
        if changed:
            raise BadRequest(f"{path.parent} holds samples made with other settings ({', '.join(changed)} differ); "
                             f"use another --out")
    else:
        path.write_text(json.dumps(settings, indent=2) + "\n")


def _key(item: Item) -> tuple[str, int]:
    return str(item[0]["question_id"]), item[1]


def _stored(rec: dict[str, Any]) -> Completion:
    return Completion(rec.get("response", ""), rec.get("finish_reason"), rec.get("tool_calls", 0), rec.get("gen_s"))


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


async def _all(coros: Iterable[Awaitable[None]]) -> None:
    """Run them all; the first failure cancels the rest and is raised as itself (not a group)."""
    try:
        async with asyncio.TaskGroup() as group:
            for coro in coros:
                group.create_task(coro)  # type: ignore[arg-type]
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None


def _latest_records(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The last record per (question_id, sample) in samples.jsonl; a torn last line is ignored."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
                latest[(str(rec["question_id"]), int(rec["sample"]))] = rec
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
    return latest


def _backend(cfg: EvalConfig) -> Any:
    from coderl.eval import backends

    if cfg.backend == "responses":
        if not cfg.responses:
            raise BadRequest("--responses FILE is required with --backend responses")
        if cfg.tools:
            raise BadRequest("--tools needs a model to talk to (--backend openai or vllm), not a --responses file")
        return backends.ResponsesBackend(cfg.responses)
    if cfg.backend == "vllm":
        if not cfg.model:
            raise BadRequest("--model (a Hugging Face model dir) is required with --backend vllm")
        return backends.VLLMBackend(cfg.model, cfg.sampling, tensor_parallel_size=cfg.tensor_parallel_size)
    if cfg.backend == "openai":
        if not cfg.base_url or not cfg.model:
            raise BadRequest("--base-url and --model are required with --backend openai")
        return backends.OpenAIBackend(cfg.base_url, cfg.model, cfg.sampling, concurrency=cfg.concurrency or 32)
    raise BadRequest(f"unknown backend {cfg.backend!r}: openai, vllm or responses")


def exit_code(summary: dict[str, Any]) -> int:
    """0 when every sample was scored; 1 when sandbox errors remain (run again to judge them)."""
    return 1 if summary["sandbox_errors_excluded"] or summary["missing"] else 0

