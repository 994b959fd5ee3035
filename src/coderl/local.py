"""The in-process twin of `coderl.client.SandboxClient`: the same ``judge`` / ``judge_one`` / ``run``
with the same dicts in and out, served by an engine in this process instead of the service. The
reward (no ``sandbox_url``) and the evaluator (no ``--sandbox-url``) use it, and the service's
routes build their submissions and /v1/run replies with its two functions, so the "HTTP service or
in-process engine" choice and the dict -> `Submission` translation are written once."""

from __future__ import annotations

import asyncio
from typing import Any

from coderl.errors import BadRequest, to_wire
from coderl.judge import DEFAULT_LIMITS, Judge, Submission
from coderl.judge.formats import to_spec
from coderl.sandbox import Engine, Execution, Limits, Program


def submission(item: dict[str, Any], base: Limits = DEFAULT_LIMITS) -> Submission:
    """A /v1/judge submission dict (``tests``, ``code`` or ``response``, ``language``, ``format``,
    ``fn_name``, ``limits``, ``stop_on_first_failure``, ``total_time_s``) as a `Submission`;
    ``limits`` override ``base`` field by field. BadRequest when its tests cannot be read."""
    spec = item["tests"]
    if item.get("format") is not None:
        spec = to_spec(spec, item["format"], fn_name=item.get("fn_name"))
    limits = {k: v for k, v in (item.get("limits") or {}).items() if v is not None}
    return Submission(spec=spec, language=item.get("language"), code=item.get("code"), response=item.get("response"),
                      fn_name=item.get("fn_name"), limits=base.replace(**limits) if limits else base,
                      stop_on_first_failure=item.get("stop_on_first_failure", True),
                      total_time_s=item.get("total_time_s"))


def run_reply(ex: Execution, engine: Engine) -> dict[str, Any]:
    """The /v1/run body for one execution: ``compile`` for a compiled language (or a failed
    compile), None otherwise, as /run_code's compile_result; ``run``, the run's record."""
    compile_info = None
    if ex.compile is not None and (not ex.compile.ok or engine.language(ex.language).compile_argv is not None):
        compile_info = {"ok": ex.compile.ok, "sandbox_error": ex.compile.sandbox_error, "cached": ex.compile.cached,
                        "wall_s": round(ex.compile.run.wall_s, 6), "message": ex.compile.message[:8000]}
    return {"language": ex.language, "compile": compile_info, "run": ex.results[0].to_dict()}


class LocalSandbox:
    """``async with LocalSandbox() as sandbox: await sandbox.judge_one({...})``; slots default to
    the engine's (one per CPU)."""

    def __init__(self, *, slots: int | None = None) -> None:
        self.engine = Engine(slots=slots)
        self.judge_ = Judge(self.engine)

    async def __aenter__(self) -> LocalSandbox:
        await self.engine.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.engine.close()

    async def judge(self, submissions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(self.judge_one(s) for s in submissions)))

    async def judge_one(self, item: dict[str, Any]) -> dict[str, Any]:
        """The service's per-item result: the judge's record, or ``verdict: None`` and the error
        of a submission that cannot be judged (no code, unreadable tests)."""
        try:
            result = await self.judge_.judge(submission(item))
        except BadRequest as exc:
            return {"id": item.get("id"), "verdict": None, "accepted": False, "error": to_wire(exc)}
        return {"id": item.get("id"), **result.to_dict(include_output=bool(item.get("include_output")))}

    async def run(self, language: str, code: str, stdin: str = "", limits: dict[str, Any] | None = None) -> dict[str, Any]:
        """One program on one stdin (the limits the service's /v1/run would default to otherwise)."""
        base = Limits(cpu_s=10, wall_s=20, memory_mb=DEFAULT_LIMITS.memory_mb)
        ex = await self.engine.execute(Program(language, code), [stdin.encode()], base.replace(**(limits or {})))
        return {"isolation": ex.isolation, **run_reply(ex, self.engine)}
