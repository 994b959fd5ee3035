"""The record of one agent RL episode, from what `coderl.verl.agent_loop.GatewayAgentLoop` holds once
the episode is scored: the gateway session (its final branch's messages and token record), the
harness's result (exit, output tail, diff) and the score (judge verdict or grader result + log).

The token record is exactly what the loop returns to verl (response ids, loss mask, logprobs,
after its response-length cut and any masking of a failed episode), so the count of mask-1 tokens
in the record is the count that trained. Per-token text is one decoded piece per DISTINCT id
(``pieces``), which keeps a long episode's record small. The harness's commands are the final
branch's assistant tool calls paired with the tool messages that answered them; the gateway does
not time single commands, so timings are the episode's (harness wall time, generation time).
verl's AgentLoopWorker hands the loop the trainer's step as ``global_steps`` (the v1 trainer).
Each message carries when it reached the gateway or was sampled (``at``, wall clock), and the record
names the gateway session, the model (the tokenizer's path: the policy's) and the tool definitions
the harness sent, so an export (`coderl.records.atif`) needs nothing but the record.
"""

from __future__ import annotations

import numbers
from typing import Any

from coderl.gateway.trajectory import common_prefix
from coderl.records.code import messages
from coderl.records.writer import RecordSettings, group_key, record_safely
from coderl.swe.hack_signals import record_block


def record_episode(kwargs: dict[str, Any], session: Any, tokenizer: Any, *, response_ids: list[int],
                   mask: list[int], logprobs: list[float], prompt_len: int, reward: float | None,
                   extra: dict[str, Any], harness: Any = None, grade: Any = None) -> int:
    """Write the episode's record when records are on (``CODERL_RECORD_DIR``); bytes written."""
    settings = RecordSettings.from_env()
    step = kwargs.get("global_steps")
    return record_safely(settings, dict(kwargs.get("extra_info") or {}), lambda: agent_record(
        kwargs, session, tokenizer, response_ids=response_ids, mask=mask, logprobs=logprobs, prompt_len=prompt_len,
        reward=reward, extra=extra, harness=harness, grade=grade, max_tokens=settings.max_tokens),
        step=int(step) if isinstance(step, numbers.Real) else None)


def agent_record(kwargs: dict[str, Any], session: Any, tokenizer: Any, *, response_ids: list[int], mask: list[int],
                 logprobs: list[float], prompt_len: int, reward: float | None, extra: dict[str, Any],
                 harness: Any = None, grade: Any = None, max_tokens: int = 16384) -> dict[str, Any]:
    data_source = str(kwargs.get("data_source", ""))
    extra_info = dict(kwargs.get("extra_info") or {})
    turns = [_turn(entry["message"], entry.get("at")) for entry in session.log]
    commands = _commands(turns)
    summary = session.summary()
    truncated = ["tokens"] if len(response_ids) > max_tokens else []
    ids = [int(i) for i in response_ids[:max_tokens]]
    record: dict[str, Any] = {
        "kind": "agent", "group": group_key(data_source, extra_info), "data_source": data_source,
        "index": extra_info.get("index"), "session_id": session.id,
        "model": str(getattr(tokenizer, "name_or_path", "") or ""), "tools": session.tools or [],
        "reward": reward, "verdict": extra.get("verdict", ""),
        "grade_status": extra.get("grade_status", ""),
        "sandbox_error": int(extra.get("sandbox_error", 0)), "tool_calls": len(commands),
        "branches": summary["branches"], "drifts": summary["drifts"], "demoted_tokens": summary["demoted_tokens"],
        "dropped_sampled_tokens": summary["dropped_sampled_tokens"], "context_truncated": int(summary["truncated"]),
        "prompt": messages(kwargs.get("raw_prompt")), "turns": turns, "commands": commands,
        "tokens": {"prompt_len": prompt_len, "prompt_ids": _prompt_ids(session, prompt_len), "ids": ids,
                   "mask": "".join("1" if m else "0" for m in mask[:max_tokens]),
                   "logprobs": [round(float(x), 4) for x in logprobs[:max_tokens]],
                   "turn_starts": _turn_starts(session, prompt_len), "turn_lengths": _turn_lengths(session, prompt_len),
                   "fork_at": _fork_at(session, prompt_len),
                   "pieces": _pieces(tokenizer, ids)},
        "harness": {"exit_code": extra.get("agent_exit_code"), "timed_out": extra.get("agent_timed_out"),
                    "isolation": extra.get("agent_isolation"), "wall_s": getattr(harness, "wall_s", None),
                    "generation_s": summary["generation_s"], "output_tail": extra.get("agent_output_tail", ""),
                    "error": extra.get("agent_error", "")},
        "diff": getattr(harness, "diff", None) or "",
        "hack": record_block(extra),  # reward-hack telemetry (coderl.swe.hack_signals)
        "truncated": truncated,
    }
    if grade is not None:
        record["grader"] = {"status": grade.status, "reward": grade.reward, "fail_to_pass": grade.fail_to_pass,
                            "pass_to_pass": grade.pass_to_pass, "tests_touched": grade.tests_touched,
                            "findings": list(getattr(grade, "findings", []) or []), "message": grade.message, "log": grade.log_tail, "wall_s": grade.wall_s}
    return record


def _turn(message: dict[str, Any], at: float | None = None) -> dict[str, Any]:
    """One message of the final branch; ``at``: when it reached the gateway or was sampled (epoch s)."""
    content = message.get("content")
    text = content if isinstance(content, str) else "".join(
        p.get("text", "") for p in content or [] if isinstance(p, dict))
    turn: dict[str, Any] = {"role": str(message.get("role", "")), "content": text}
    if at is not None:
        turn["at"] = round(at, 3)
    if isinstance(message.get("reasoning_content"), str):
        turn["reasoning"] = message["reasoning_content"]
    calls = message.get("tool_calls") or []
    if calls:
        turn["tool_calls"] = [{"id": c.get("id"), "name": (c.get("function") or {}).get("name", "?"),
                               "arguments": (c.get("function") or {}).get("arguments", "")} for c in calls]
    if message.get("tool_call_id"):
        turn["tool_call_id"] = message["tool_call_id"]
    return turn


def _commands(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each tool call of the final branch with the output the harness sent back for it (matched by
    call id, else the next unanswered call in order)."""
    commands: list[dict[str, Any]] = []
    waiting: list[dict[str, Any]] = []
    for turn in turns:
        for call in turn.get("tool_calls") or []:
            command = {"id": call.get("id"), "name": call["name"], "arguments": call["arguments"], "output": None}
            commands.append(command)
            waiting.append(command)
        if turn["role"] == "tool" and waiting:
            match = next((c for c in waiting if c["id"] and c["id"] == turn.get("tool_call_id")), waiting[0])
            match["output"] = turn["content"]
            waiting.remove(match)
    return commands


def _prompt_ids(session: Any, prompt_len: int) -> list[int]:
    """The prompt the response continues (the harness's first request, as rendered), so the record
    alone can be scored again: e.g. the smoke run recomputes each trained token's logprob."""
    final = session.trajectory.final()
    return [int(i) for i in final.ids[:prompt_len]] if final.turns else []


def _turn_starts(session: Any, prompt_len: int) -> list[int]:
    """Where each sampled turn of the final branch starts, as an index into the response."""
    return [t.start - prompt_len for t in session.trajectory.final().turns if t.start >= prompt_len]


def _turn_lengths(session: Any, prompt_len: int) -> list[int]:
    """How many tokens each of those turns sampled (``turn_starts``' partners): the mask cannot say
    once a failed episode's mask is zeroed."""
    return [t.length for t in session.trajectory.final().turns if t.start >= prompt_len]


def _fork_at(session: Any, prompt_len: int) -> int | None:
    """Where the final branch left its parent (the harness rewrote its history there), as an index
    into the response; None when the final branch is the first or forked inside the prompt."""
    branches = session.trajectory.branches
    final = session.trajectory.final()
    k = next(i for i, b in enumerate(branches) if b is final)
    if k == 0:
        return None
    shared = common_prefix(branches[k - 1].ids, final.ids) - prompt_len
    return shared if shared >= 0 else None


def _pieces(tokenizer: Any, ids: list[int]) -> dict[str, str]:
    distinct = sorted(set(ids))
    texts = tokenizer.batch_decode([[i] for i in distinct]) if distinct else []
    return {str(i): t for i, t in zip(distinct, texts, strict=True)}
