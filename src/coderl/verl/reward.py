"""The verl reward function: run the final answer's program against the hidden tests.

Use it from verl 0.9.1 (no patch) with::

    reward.custom_reward_function.path=<site-packages>/coderl/verl/reward.py
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.sandbox_url=http://127.0.0.1:8080

It is async: verl awaits it in each RewardLoopWorker's event loop, so a worker keeps many samples
in flight against the sandbox instead of one thread per sample.

Scores: ``binary`` (default, as LiveCodeBench scores: 1 only when every test passes) or
``fraction`` (the recipe's partial credit). A response without code scores ``format_penalty``
(default 0). A sandbox failure (our fault, after retries) is never scored as a wrong answer: the
sample gets ``sandbox_error=1`` and ``sandbox_error_score`` (default 0.0; exclude such samples
through the flag). Every path returns the same keys, numbers and strings only.

With ``log_dir`` (or ``CODERL_REWARD_LOG_DIR``) every sample's record is also appended to a
per-step JSONL file (see `coderl.records.samples_log`): verl 0.9.1 keeps no per-step reward extras.
With ``record_dir`` (or ``CODERL_RECORD_DIR``; ``""`` turns it off) the sample's whole record
(prompt, turns, tool runs, answer, per-test verdicts: `coderl.records`) goes to
``<record_dir>/<step>.jsonl`` for ``coderl view``; ``record_every`` keeps every k-th group only.
"""

from __future__ import annotations

import asyncio
import json
import numbers
import os
import random
import time
import warnings
import weakref
from typing import Any

from coderl.errors import BadRequest, CoderlError, NoCodeFound, from_wire, to_wire
from coderl.judge import Verdict
from coderl.judge.final_answer import final_answer
from coderl.records.code import code_record
from coderl.records.samples_log import log_sample
from coderl.records.writer import RecordSettings, record_safely
from coderl.swe.hack_signals import KEYS as HACK_KEYS
from coderl.swe.hack_signals import judged_signals

VERDICT_KEYS = tuple(f"verdict_{v.value}" for v in Verdict if v is not Verdict.SKIPPED)
# One HTTP client / embedded judge per event loop (each RewardLoopWorker runs one loop); keyed by
# the loop object itself, so a later loop never inherits one bound to a closed loop.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, ...], Any]] = weakref.WeakKeyDictionary()
_embedded: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()


async def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None, *,
                        sandbox_url: str | list[str] | None = None, score_mode: str = "binary",
                        format_penalty: float = 0.0, sandbox_error_score: float = 0.0, language: str = "python",
                        cpu_s: float = 6.0, wall_s: float = 12.0, memory_mb: int = 1024, total_time_s: float = 60.0,
                        retries: int = 3, log_dir: str | None = None, record_dir: str | None = None,
                        record_every: int | None = None,
                        reward_router_address: str | None = None, reward_model_tokenizer: Any = None) -> dict[str, Any]:
    """Reward for one response; see the module docstring. The options are named (no ``**kwargs``) so
    that a misspelled ``reward_kwargs`` key fails instead of being ignored; the last two are what
    verl passes when a reward-model router is configured, unused here."""
    if score_mode not in ("binary", "fraction"):
        raise ValueError(f"score_mode must be 'binary' or 'fraction', got {score_mode!r}")
    extra_info = extra_info or {}
    started = time.perf_counter()
    answer = final_answer(solution_str)
    out = _record(extra_info, answer.tool_calls)
    submission = {"response": answer.text, "language": language, "tests": tests_of(ground_truth),
                  "limits": {"cpu_s": cpu_s, "wall_s": wall_s, "memory_mb": memory_mb},
                  "stop_on_first_failure": score_mode == "binary", "total_time_s": total_time_s}
    url = sandbox_url or os.environ.get("CODERL_SANDBOX_URL") or None
    result: dict[str, Any] | None = None
    for attempt in range(retries + 1):
        try:
            result = await _judge(url, submission)
        except BadRequest as exc:  # the tests themselves are broken: not the model's fault either
            result = {"verdict": None, "error": to_wire(exc)}
        except CoderlError as exc:  # unreachable / overloaded after the client's own retries: not again
            result = {"verdict": "sandbox_error", "error": to_wire(exc)}
            break
        if result.get("verdict") != "sandbox_error" or attempt == retries:
            break
        await asyncio.sleep(min(10.0, 0.5 * 2 ** attempt) * random.uniform(0.5, 1.0))
    out = _score(out, result or {}, score_mode, format_penalty, sandbox_error_score)
    out["judge_s"] = round(time.perf_counter() - started, 3)
    log_dir = log_dir or os.environ.get("CODERL_REWARD_LOG_DIR")
    if log_dir:
        try:
            log_sample(log_dir, data_source, extra_info, out)
        except OSError as exc:  # a full or read-only disk must not fail a training step
            warnings.warn(f"coderl reward: cannot log the sample to {log_dir}: {exc}", stacklevel=1)
    record_safely(RecordSettings.from_env(record_dir, record_every), extra_info,
                  lambda: code_record(data_source, solution_str, extra_info, result or {}, out, answer.text))
    return out


def _record(extra_info: dict, tool_calls: int) -> dict[str, Any]:
    num_turns = extra_info.get("num_turns")  # a numpy integer in a real rollout
    return {"score": 0.0, "acc": 0.0, "verdict": "none", "tests_passed": 0, "tests_total": 0, "pass_rate": 0.0,
            "sandbox_error": 0, "has_code": 0, "extraction": "none", "error": "", "judge_s": 0.0,
            "tool_calls": tool_calls, "num_turns": int(num_turns) if isinstance(num_turns, numbers.Real) else 0,
            **{k: 0 for k in VERDICT_KEYS}, **dict.fromkeys(HACK_KEYS, 0)}


def _score(out: dict[str, Any], result: dict[str, Any], score_mode: str, format_penalty: float,
           sandbox_error_score: float) -> dict[str, Any]:
    error = result.get("error") or {}
    if error:
        out["error"] = f"{error.get('type', 'Error')}: {error.get('message', '')}"[:300]
    if error and isinstance(from_wire(error), NoCodeFound):
        out.update(score=float(format_penalty), verdict="no_code")
        return out
    verdict = result.get("verdict")
    if verdict is None:  # unreadable tests: flag as infrastructure, never as the model's failure
        verdict = "sandbox_error"
    out["verdict"] = verdict
    out.update(judged_signals(result))  # reward-hack telemetry (coderl.swe.hack_signals)
    out["has_code"] = 1
    out["extraction"] = result.get("extraction_rule") or "none"
    out["tests_passed"] = int(result.get("passed", 0))
    out["tests_total"] = int(result.get("total", 0))
    out["pass_rate"] = out["tests_passed"] / out["tests_total"] if out["tests_total"] else 0.0
    if f"verdict_{verdict}" in out:
        out[f"verdict_{verdict}"] = 1
    if verdict == "sandbox_error":
        out.update(sandbox_error=1, score=float(sandbox_error_score))
        return out
    accepted = verdict == "accepted"
    out["acc"] = 1.0 if accepted else 0.0
    out["score"] = 1.0 if accepted else (out["pass_rate"] if score_mode == "fraction" else 0.0)
    return out


def tests_of(ground_truth: Any) -> Any:
    """The tests in a dataset's ``reward_model.ground_truth`` (JSON text, a Python literal string, a
    dict, or numpy arrays out of parquet), in a form `coderl.judge.to_spec` and the service read."""
    if isinstance(ground_truth, str):
        try:
            return json.loads(ground_truth)
        except json.JSONDecodeError:
            return ground_truth  # a Python-literal string: the service's adapters read it
    if hasattr(ground_truth, "tolist"):  # numpy arrays out of parquet
        return ground_truth.tolist()
    return ground_truth


async def _judge(url: str | list[str] | None, submission: dict[str, Any]) -> dict[str, Any]:
    """One sample's result. Through the service, the samples a worker scores at the same time share
    /v1/judge requests (`SandboxClient.judge_one`)."""
    loop = asyncio.get_running_loop()
    if url:
        from coderl.client import SandboxClient

        urls = tuple(url) if isinstance(url, list | tuple) else tuple(u for u in str(url).split(",") if u)
        clients = _clients.setdefault(loop, {})
        if urls not in clients:
            clients[urls] = SandboxClient(list(urls), retries=4)
        return await clients[urls].judge_one(submission)
    return await _embedded_judge(loop, submission)


async def _embedded_judge(loop: asyncio.AbstractEventLoop, s: dict[str, Any]) -> dict[str, Any]:
    """No URL: an engine in this process (small setups and tests; a service scales better)."""
    from coderl.local import LocalSandbox

    if loop not in _embedded:
        _embedded[loop] = await LocalSandbox(slots=int(os.environ.get("CODERL_EMBEDDED_SLOTS", "2"))).__aenter__()
    return await _embedded[loop].judge_one(s)  # type: ignore[no-any-return]
