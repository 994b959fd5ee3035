"""Scoring responses on the same sandbox and judge the reward uses: through the service
(``sandbox_url``, `coderl.client`) or an in-process engine, with LiveCodeBench's rules (the final
answer after any tool use, the last code block, every test must pass, stop at the first failure,
6 s per test).

Sandbox-error policy: a sample whose judging failed on our side (a sandbox_error verdict, an
engine fault) is retried twice here, and the service being unreachable has already been retried
by the client; if it still fails it is recorded as ``sandbox_error`` with its response kept, excluded from pass@k,
counted in the summary, and judged again (not regenerated) by the next run over the same
output directory. It is never scored as a wrong answer.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from coderl.errors import BadRequest, CoderlError, NoCodeFound, from_wire, to_wire
from coderl.eval.backends import Completion, Item
from coderl.judge.extract import extract_lcb
from coderl.judge.final_answer import final_answer

RETRIES = 2


EXTRACTIONS = ("lcb", "coderl")


class Scorer:
    """``extraction``: ``lcb``, LiveCodeBench's own rule (`coderl.judge.extract.extract_lcb`), so
    pass@1 is comparable with official numbers; ``coderl``, the judge's rule with its fallbacks (an
    unterminated fence, a fence-less program), as the reward extracts."""

    def __init__(self, sandbox_url: str | None, *, cpu_s: float = 6.0, memory_mb: int = 1024,
                 extraction: str = "lcb") -> None:
        if extraction not in EXTRACTIONS:
            raise BadRequest(f"extraction must be one of {', '.join(EXTRACTIONS)}, got {extraction!r}")
        self.extraction = extraction
        self.sandbox_url = sandbox_url
        self.limits = {"cpu_s": cpu_s, "wall_s": cpu_s * 2 + 1, "memory_mb": memory_mb}
        self.client: Any = None  # SandboxClient, or
        self.local: Any = None  # LocalSandbox: the same judge/run

    async def __aenter__(self) -> Scorer:
        if self.sandbox_url:
            from coderl.client import SandboxClient

            self.client = SandboxClient([u for u in self.sandbox_url.split(",") if u])
            if not await self.client.health():  # said at once, not only as N sandbox errors in samples.jsonl
                print(f"coderl: warning: the sandbox at --sandbox-url {self.sandbox_url} is not reachable or not "
                      f"ready (start it with scripts/start_sandbox.sh, or leave --sandbox-url out for an in-process "
                      f"engine); samples are kept as sandbox errors and judged by the next run", file=sys.stderr)
        else:
            from coderl.local import LocalSandbox

            self.local = await LocalSandbox().__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.client is not None:
            await self.client.aclose()
        if self.local is not None:
            await self.local.aclose()

    async def score(self, items: list[Item], generations: list[Completion]) -> list[dict[str, Any]]:
        """One record per sample: ids, response, extracted code, verdicts, per-test timings."""
        subs: dict[int, dict[str, Any]] = {}
        results: list[dict[str, Any]] = [{} for _ in items]
        for i, ((p, _), g) in enumerate(zip(items, generations, strict=True)):
            try:
                subs[i] = self._submission(p["tests"], final_answer(g.text).text)
            except NoCodeFound as exc:
                results[i] = {"verdict": None, "error": to_wire(exc)}
        for i, r in zip(subs, await self._judge(list(subs.values())), strict=True):
            results[i] = r
        for attempt in range(RETRIES):
            again = [i for i in subs if results[i].get("verdict") == "sandbox_error" and not results[i].get("unreachable")]
            if not again:
                break
            await asyncio.sleep(1.0 + 2 * attempt)
            for i, r in zip(again, await self._judge([subs[i] for i in again]), strict=True):
                results[i] = r
        if self.extraction == "lcb":
            for i in subs:
                results[i]["extraction_rule"] = "lcb"
        return [_record(p, i, g, r) for (p, i), g, r in zip(items, generations, results, strict=True)]

    def _submission(self, tests: Any, answer: str) -> dict[str, Any]:
        """What the judge gets for one final answer; raises NoCodeFound under the lcb rule."""
        sub = {"language": "python", "tests": tests, "limits": self.limits, "stop_on_first_failure": True}
        if self.extraction == "coderl":
            return {**sub, "response": answer}
        return {**sub, "code": extract_lcb(answer).code}

    async def run(self, language: str, code: str, stdin: str, limits: dict[str, Any]) -> dict[str, Any]:
        """One program on one stdin, the service's /v1/run reply (for the tool)."""
        return await (self.client or self.local).run(language, code, stdin, limits)  # type: ignore[no-any-return]

    async def _judge(self, subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not subs:
            return []
        try:
            return await (self.client or self.local).judge(subs)  # type: ignore[no-any-return]
        except BadRequest:
            raise
        except CoderlError as exc:  # unreachable after the client's retries: our fault, never the model's
            return [{**_sandbox_error(exc), "unreachable": True} for _ in subs]


def _sandbox_error(exc: Exception) -> dict[str, Any]:
    return {"verdict": "sandbox_error", "error": to_wire(exc)}


def _record(problem: dict[str, Any], sample: int, gen: Completion, res: dict[str, Any]) -> dict[str, Any]:
    error = res.get("error") or {}
    no_code = bool(error) and isinstance(from_wire(error), NoCodeFound)
    verdict = "no_code" if no_code else (res.get("verdict") or "sandbox_error")
    return {
        "question_id": str(problem["question_id"]), "sample": sample, "difficulty": problem.get("difficulty") or "",
        "platform": problem.get("platform") or "", "verdict": verdict, "passed": res.get("passed", 0),
        "total": res.get("total", 0), "response": gen.text, "finish_reason": gen.finish_reason,
        "tool_calls": gen.tool_calls, "code": res.get("code", ""), "extraction_rule": res.get("extraction_rule"),
        "cases": [{"verdict": c["verdict"], "cpu_s": (c.get("run") or {}).get("cpu_s"),
                   "wall_s": (c.get("run") or {}).get("wall_s")} for c in res.get("cases", [])],
        "error": error.get("message", "") if verdict == "sandbox_error" else "",
        "gen_s": gen.gen_s, "judge_s": res.get("wall_s"), "scored_at": round(time.time(), 3),
    }
