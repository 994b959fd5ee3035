"""`coderl eval lcb`: generate (or read) responses, score them on the same sandbox and judge the
reward uses, and write per-sample JSONL plus a JSON + Markdown summary.

Policy for sandbox errors: a sample whose judging failed on our side is retried; if it still fails
it is excluded from pass@k (never counted as wrong) and counted in the summary, and a later run
(resumable) scores it again. Extraction failures (no code block) are wrong answers, counted too.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from coderl.errors import BadRequest
from coderl.eval.backends import Sampling
from coderl.eval.passk import mean_pass_at_k
from coderl.judge.formats import to_spec
from coderl.reward.answer import final_answer


@dataclass
class EvalConfig:
    problems: str
    out_dir: str
    sampling: Sampling = field(default_factory=Sampling)
    backend: str = "openai"  # openai | vllm | responses
    base_url: str | None = None
    model: str | None = None
    responses: str | None = None
    sandbox_url: str | None = None
    tools: bool = False
    max_turns: int = 8
    concurrency: int = 32
    limit: int | None = None
    cpu_s: float = 6.0
    memory_mb: int = 1024


def load_problems(path: str, limit: int | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """problems.jsonl from `coderl data lcb` (or raw LiveCodeBench rows); and the set's meta."""
    from coderl.data.common import read_rows
    from coderl.data.lcb import lcb_row
    from coderl.data.prompts import lcb_messages

    p = Path(path)
    meta_file = (p if p.is_dir() else p.parent) / "meta.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
    source = p / "problems.jsonl" if p.is_dir() else p
    problems = []
    for row in read_rows(source, limit=limit):
        if "tests" not in row and "public_test_cases" in row:  # a raw LiveCodeBench row
            from datetime import datetime

            row = lcb_row(row, datetime.min, datetime.max)
        if "prompt" not in row:
            row["prompt"] = lcb_messages(row.get("question_content", ""), row.get("starter_code", ""))
        to_spec(row["tests"])  # fail early on unreadable tests
        problems.append(row)
    if not problems:
        raise BadRequest(f"{path}: no problems")
    return problems, meta


async def evaluate(cfg: EvalConfig) -> dict[str, Any]:
    problems, meta = load_problems(cfg.problems, cfg.limit)
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    samples_path = out / "samples.jsonl"
    done = _load_done(samples_path)
    todo = [(p, i) for p in problems for i in range(cfg.sampling.n) if (str(p["question_id"]), i) not in done]
    scorer = await _Scorer.create(cfg)
    try:
        with samples_path.open("a", encoding="utf-8") as sink, tqdm(total=len(todo), desc="eval", unit=" samples") as bar:
            for chunk in _chunks(todo, max(1, cfg.concurrency)):
                responses = await _generate(cfg, scorer, chunk)
                records = await scorer.score(chunk, responses)
                for rec in records:
                    sink.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    done[(rec["question_id"], rec["sample"])] = rec
                sink.flush()
                bar.update(len(chunk))
    finally:
        await scorer.close()
    summary = summarise(problems, done, cfg, meta)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    (out / "summary.md").write_text(markdown(summary))
    return summary


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _load_done(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Already-scored samples (resuming); sandbox errors are scored again."""
    done: dict[tuple[str, int], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if rec.get("verdict") != "sandbox_error":
                done[(str(rec["question_id"]), int(rec["sample"]))] = rec
    return done


async def _generate(cfg: EvalConfig, scorer: _Scorer, chunk: list[tuple[dict, int]]) -> list[tuple[str, int]]:
    """(response, tool calls) per (problem, sample index)."""
    if cfg.backend == "responses":
        got = scorer.responses
        out = []
        for p, i in chunk:
            rs = got.get(str(p["question_id"]), [])
            out.append((rs[i] if i < len(rs) else "", 0))
        return out
    if cfg.backend == "vllm":
        texts = scorer.vllm.generate([p["prompt"] for p, _ in chunk], Sampling(**{**cfg.sampling.__dict__, "n": 1}))
        return [(t[0], 0) for t in texts]
    from coderl.eval.agent import run_with_tools

    async def one(problem: dict) -> tuple[str, int]:
        if cfg.tools:
            return await run_with_tools(scorer.backend, scorer.http, scorer.client, problem["prompt"], cfg.sampling,
                                        cfg.max_turns)
        reply = await scorer.backend.chat(scorer.http, problem["prompt"], cfg.sampling)
        return reply["message"].get("content") or "", 0

    return await asyncio.gather(*(one(p) for p, _ in chunk))


class _Scorer:
    """Judging through the service (``sandbox_url``) or an in-process engine, plus the backends."""

    def __init__(self, cfg: EvalConfig) -> None:
        self.cfg = cfg
        self.client: Any = None
        self.engine: Any = None
        self.judge: Any = None
        self.http: Any = None
        self.backend: Any = None
        self.vllm: Any = None
        self.responses: dict[str, list[str]] = {}

    @classmethod
    async def create(cls, cfg: EvalConfig) -> _Scorer:
        self = cls(cfg)
        if cfg.backend == "responses":
            from coderl.eval.backends import read_responses

            if not cfg.responses:
                raise BadRequest("--responses FILE is required with the responses backend")
            self.responses = read_responses(cfg.responses)
        elif cfg.backend == "vllm":
            from coderl.eval.backends import VLLMBackend

            if not cfg.model:
                raise BadRequest("--model (a local checkpoint) is required with the vllm backend")
            self.vllm = VLLMBackend(cfg.model)
        elif cfg.backend == "openai":
            import httpx

            from coderl.eval.backends import OpenAIBackend

            if not cfg.base_url or not cfg.model:
                raise BadRequest("--base-url and --model are required with the openai backend")
            self.backend = OpenAIBackend(cfg.base_url, cfg.model, concurrency=cfg.concurrency)
            self.http = httpx.AsyncClient()
        else:
            raise BadRequest(f"unknown backend {cfg.backend!r}: openai, vllm or responses")
        if cfg.sandbox_url:
            from coderl.client import SandboxClient

            self.client = SandboxClient(cfg.sandbox_url.split(","))
        else:
            if cfg.tools:
                raise BadRequest("multi-turn evaluation with tools needs --sandbox-url")
            from coderl.judge import Judge
            from coderl.sandbox import Engine

            self.engine = Engine()
            await self.engine.start()
            self.judge = Judge(self.engine)
        return self

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()
        if self.engine is not None:
            await self.engine.close()
        if self.http is not None:
            await self.http.aclose()

    async def score(self, chunk: list[tuple[dict, int]], responses: list[tuple[str, int]]) -> list[dict[str, Any]]:
        subs = [{"response": final_answer(r).text, "language": "python", "tests": p["tests"],
                 "limits": {"cpu_s": self.cfg.cpu_s, "wall_s": self.cfg.cpu_s * 2, "memory_mb": self.cfg.memory_mb}}
                for (p, _), (r, _) in zip(chunk, responses, strict=True)]
        results = await self._judge(subs)
        for attempt in range(2):  # retry what failed on our side
            again = [i for i, r in enumerate(results) if r.get("verdict") == "sandbox_error"]
            if not again:
                break
            await asyncio.sleep(1.0 + attempt)
            for i, r in zip(again, await self._judge([subs[i] for i in again]), strict=True):
                results[i] = r
        records = []
        for (p, i), (response, calls), res in zip(chunk, responses, results, strict=True):
            error = (res.get("error") or {}).get("type")
            records.append({
                "question_id": str(p["question_id"]), "sample": i, "difficulty": p.get("difficulty", ""),
                "platform": p.get("platform", ""), "response": response, "code": res.get("code", ""),
                "extraction_rule": res.get("extraction_rule") or ("none" if error == "NoCodeFound" else None),
                "verdict": "no_code" if error == "NoCodeFound" else (res.get("verdict") or "sandbox_error"),
                "passed": res.get("passed", 0), "total": res.get("total", 0), "tool_calls": calls,
                "case_verdicts": [c["verdict"] for c in res.get("cases", [])], "wall_s": res.get("wall_s", 0.0),
                "scored_at": time.time(),
            })
        return records

    async def _judge(self, subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.client is not None:
            return await self.client.judge(subs)
        from coderl.judge import Submission
        from coderl.sandbox import Limits

        async def one(s: dict[str, Any]) -> dict[str, Any]:
            try:
                res = await self.judge.judge(Submission(spec=s["tests"], response=s["response"], language="python",
                                                        limits=Limits(**s["limits"])))
                return res.to_dict(include_output=False)
            except BadRequest as exc:
                return {"verdict": None, "error": {"type": type(exc).__name__, "message": str(exc)}}

        return await asyncio.gather(*(one(s) for s in subs))


def summarise(problems: list[dict], done: dict[tuple[str, int], dict], cfg: EvalConfig, meta: dict) -> dict[str, Any]:
    n = cfg.sampling.n
    by_problem: dict[str, list[dict]] = defaultdict(list)
    for (qid, _), rec in done.items():
        by_problem[qid].append(rec)
    groups: dict[str, dict[str, list[tuple[int, int]]]] = {"overall": {"all": []}, "difficulty": defaultdict(list),
                                                             "platform": defaultdict(list)}
    sandbox_errors = extraction_failures = 0
    for p in problems:
        recs = [r for r in by_problem.get(str(p["question_id"]), []) if r["verdict"] != "sandbox_error"]
        extraction_failures += sum(r["verdict"] == "no_code" for r in recs)
        sandbox_errors += n - len(recs)
        if not recs:
            continue
        count = (len(recs), sum(r["verdict"] == "accepted" for r in recs))
        groups["overall"]["all"].append(count)
        groups["difficulty"][p.get("difficulty") or "unknown"].append(count)
        groups["platform"][p.get("platform") or "unknown"].append(count)
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= n]

    def table(counts: list[tuple[int, int]]) -> dict[str, Any]:
        return {"problems": len(counts), **{f"pass@{k}": _pct(mean_pass_at_k(counts, k)) for k in ks}}

    return {
        "benchmark": "livecodebench", "release": meta.get("release"), "start_date": meta.get("start_date"),
        "end_date": meta.get("end_date"), "problems": len(problems), "sampling": cfg.sampling.to_dict(),
        "backend": cfg.backend, "model": cfg.model, "tools": cfg.tools,
        "overall": table(groups["overall"]["all"]),
        "by_difficulty": {k: table(v) for k, v in sorted(groups["difficulty"].items())},
        "by_platform": {k: table(v) for k, v in sorted(groups["platform"].items())},
        "extraction_failures": extraction_failures, "sandbox_errors_excluded": sandbox_errors,
        "judge": "coderl (LiveCodeBench-exact comparison; deliberate deviations in docs/judge.md)",
    }


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)


def markdown(summary: dict[str, Any]) -> str:
    ks = [k for k in summary["overall"] if k.startswith("pass@")]
    window = f"{summary.get('release') or '?'}, {summary.get('start_date') or '?'}..{summary.get('end_date') or '?'}"
    s = summary["sampling"]
    lines = [f"# LiveCodeBench ({window})", "",
             f"{summary['problems']} problems; n={s['n']}, temperature {s['temperature']}, top_p {s['top_p']}, "
             f"max_tokens {s['max_tokens']}; backend {summary['backend']}"
             + (f" ({summary['model']})" if summary.get("model") else "") + ("; with code_interpreter" if summary["tools"] else ""),
             "", "| group | problems | " + " | ".join(ks) + " |", "|---|---|" + "---|" * len(ks)]

    def row(name: str, t: dict[str, Any]) -> str:
        return f"| {name} | {t['problems']} | " + " | ".join("-" if t[k] is None else f"{t[k]:.2f}" for k in ks) + " |"

    lines.append(row("overall", summary["overall"]))
    lines += [row(k, v) for k, v in summary["by_difficulty"].items()]
    lines += [row(k, v) for k, v in summary["by_platform"].items()]
    lines += ["", f"Extraction failures (no code block, scored wrong): {summary['extraction_failures']}. "
                  f"Sandbox errors excluded after retries: {summary['sandbox_errors_excluded']}.", ""]
    return "\n".join(lines)
