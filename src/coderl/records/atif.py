"""An episode record (`coderl.records`) as one Harbor trajectory: ATIF, the Agent Trajectory
Interchange Format (harbor-framework/harbor ``rfcs/0001-trajectory-format.md``; the models are
``harbor.models.trajectories``, checked against harbor 0.26.0), so the tools people already run on
Harbor trajectories (its viewer, its trace export to SFT rows, other RL stacks' ATIF readers) take
coderl's episodes.

How a record maps: each message of the conversation is a step (system and user messages as
``system``/``user``, assistant turns as ``agent``); a tool message is the ``observation`` of the agent
step whose call it answers (by call id, else the next unanswered call, as the record's ``commands``
pair them). An agent step carries its sampled turn's token ids, logprobs and counts (``metrics``:
the prompt it continued, token for token, is ``prompt_token_ids``), and the message's time at the
gateway (``timestamp``). ATIF has no place for a reward or a verdict: they, the grader's result, the
diff, the harness's exit and everything else the record holds that no ATIF field takes, stay under
the root's ``extra`` as written; the per-token loss mask and the branch counts go to ``extra``s too.

Not carried: the record's decoded token pieces (the tokenizer gives them back); earlier branches of
a session (the record keeps the final branch only); texts the record cut (its ``truncated`` list,
kept in ``extra``, names them). Token metrics are left off the steps when the record's sampled turns
cannot be paired one to one with its assistant messages (a harness that rewrote an assistant turn:
``notes`` says so), and a turn past the record's token cap keeps its counts without ids.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from coderl import __version__
from coderl.swe.task_ref import AGENT_NAME

SCHEMA_VERSION = "ATIF-v1.7"  # the oldest version with every field used here (tool calls' extra)
AGENTS = {"agent": AGENT_NAME, "code": "coderl_tool_agent"}  # the verl agent loop that ran it
MAPPED = {"agent": ("turns", "tokens", "tools", "model", "session_id", "commands"),
          "code": ("turns", "prompt", "tool_runs")}
TOKENS_MAPPED = ("ids", "logprobs", "prompt_ids", "pieces")


def atif_trajectory(record: dict[str, Any]) -> dict[str, Any]:
    """The ATIF trajectory (a JSON-ready dict, ``None`` fields left out) of one record; raises
    ValueError when the record is not an agent or code record or has no conversation."""
    kind = str(record.get("kind") or "code")
    if kind not in AGENTS:
        raise ValueError(f"record kind {kind!r} is not an episode (agent or code)")
    conversation = _conversation(record, kind)
    if not conversation:
        raise ValueError("record has no messages (no turns and no prompt)")
    notes: list[str] = []
    metrics = _turn_metrics(record, conversation, notes) if kind == "agent" else {}
    steps: list[dict[str, Any]] = []
    for position, message in enumerate(conversation):
        if message.get("role") == "tool":
            _observe(steps, message, _tool_run(record, kind, steps))
        else:
            steps.append(_step(len(steps) + 1, message, metrics.get(position)))
    return _drop_none({
        "schema_version": SCHEMA_VERSION,
        "session_id": str(record.get("session_id") or _episode_name(record)),
        "agent": {"name": AGENTS[kind], "version": __version__, "model_name": record.get("model") or None,
                  "tool_definitions": record.get("tools") or None},
        "steps": steps,
        "notes": " ".join([f"Exported by coderl {__version__} from its {kind} record of the episode "
                           "(reward, verdict, grader result under extra)."] + notes),
        "final_metrics": _final_metrics(record, steps),
        "extra": _unmapped(record, kind),
    })


def _conversation(record: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """An agent record's turns are the harness's own conversation (its system prompt first); a
    code record's turns are the response only, after the dataset's prompt."""
    turns = [t for t in record.get("turns") or [] if isinstance(t, dict)]
    prompt = [m for m in record.get("prompt") or [] if isinstance(m, dict)]
    if kind == "agent":
        return turns or prompt
    return prompt + turns


def _step(step_id: int, message: dict[str, Any], metrics: dict[str, Any] | None) -> dict[str, Any]:
    role = str(message.get("role") or "")
    step: dict[str, Any] = {"step_id": step_id, "timestamp": _timestamp(message.get("at")),
                            "message": str(message.get("content") or "")}
    if role == "assistant":
        calls = [_tool_call(step_id, k, c) for k, c in enumerate(message.get("tool_calls") or [])]
        step.update(source="agent", reasoning_content=message.get("reasoning"), tool_calls=calls or None,
                    metrics=metrics, llm_call_count=1)
    else:
        step["source"] = "system" if role in ("system", "developer") else "user"
        if role not in ("system", "user"):  # e.g. the prompt the viewer took from verl's rollout dump
            step["extra"] = {"role": role}
    return step


def _tool_call(step_id: int, k: int, call: dict[str, Any]) -> dict[str, Any]:
    """ATIF wants arguments as an object; ours are the JSON text the model wrote (agent records) or
    already parsed (code records). Text that is not a JSON object is kept whole in ``extra``."""
    raw = call.get("arguments")
    arguments: Any = raw
    if isinstance(raw, str):
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError:
            arguments = None
    out: dict[str, Any] = {"tool_call_id": str(call.get("id") or f"call_{step_id}_{k}"),
                           "function_name": str(call.get("name") or "?"),
                           "arguments": arguments if isinstance(arguments, dict) else {}}
    if not isinstance(arguments, dict) or call.get("ill_formed"):
        out["extra"] = {"raw_arguments": raw if isinstance(raw, str) else json.dumps(raw), "ill_formed": True}
    return out


def _observe(steps: list[dict[str, Any]], message: dict[str, Any], run: dict[str, Any] | None) -> None:
    """Attach a tool message to the agent step whose call it answers; one with no such step (a
    harness that sent tool output unasked) becomes a system step holding only that observation."""
    result: dict[str, Any] = {"content": str(message.get("content") or "")}
    if run:
        result["extra"] = run
    last = steps[-1] if steps else None
    if last is None or last["source"] != "agent" or not last.get("tool_calls"):
        steps.append({"step_id": len(steps) + 1, "source": "system", "message": "",
                      "timestamp": _timestamp(message.get("at")), "observation": {"results": [result]},
                      "extra": {"role": "tool"}})
        return
    results = last.setdefault("observation", {"results": []})["results"]
    answered = {r.get("source_call_id") for r in results}
    ids = [c["tool_call_id"] for c in last["tool_calls"]]
    wanted = message.get("tool_call_id")
    result["source_call_id"] = wanted if wanted in ids else next((i for i in ids if i not in answered), None)
    results.append(result)


def _tool_run(record: dict[str, Any], kind: str, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A code record's sandbox facts of the k-th tool call (status, times): the k-th tool message."""
    if kind != "code":
        return None
    k = sum(len((s.get("observation") or {}).get("results") or []) for s in steps)
    runs = record.get("tool_runs") or []
    if k >= len(runs) or not isinstance(runs[k], dict):
        return None
    return {key: runs[k].get(key) for key in ("language", "status", "sandbox_error", "run_wall_s", "seconds")}


def _turn_metrics(record: dict[str, Any], conversation: list[dict[str, Any]],
                  notes: list[str]) -> dict[int, dict[str, Any]]:
    """Per assistant message (by its position in the conversation): the tokens its turn sampled."""
    tokens = record.get("tokens") or {}
    starts = list(tokens.get("turn_starts") or [])
    ids, logprobs, mask = list(tokens.get("ids") or []), list(tokens.get("logprobs") or []), str(tokens.get("mask", ""))
    lengths = list(tokens.get("turn_lengths") or [_run_of_ones(mask, s) for s in starts])
    assistants = [i for i, m in enumerate(conversation) if m.get("role") == "assistant"]
    if len(assistants) != len(starts):
        if starts:
            notes.append(f"Token ids are not on the steps: {len(starts)} sampled turns in the final branch, "
                         f"{len(assistants)} assistant messages (the harness rewrote its history).")
        return {}
    prompt_len = int(tokens.get("prompt_len") or 0)
    prompt_ids = list(tokens.get("prompt_ids") or [])
    out = {}
    for position, start, length in zip(assistants, starts, lengths, strict=True):
        metrics: dict[str, Any] = {"prompt_tokens": prompt_len + start, "completion_tokens": length,
                                   "extra": {"trained_tokens": mask[start:start + length].count("1")}}
        if start + length <= len(ids):
            metrics.update(completion_token_ids=ids[start:start + length],
                           logprobs=logprobs[start:start + length] if len(logprobs) >= start + length else None,
                           prompt_token_ids=prompt_ids + ids[:start] if prompt_ids else None)
        else:
            metrics["extra"]["token_ids_cut"] = True  # past the record's token cap or the response length
        out[position] = metrics
    return out


def _run_of_ones(mask: str, start: int) -> int:
    """A turn's length from the mask (records written before ``turn_lengths``)."""
    end = start
    while end < len(mask) and mask[end] == "1":
        end += 1
    return end - start


def _final_metrics(record: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    measured = [s["metrics"] for s in steps if s.get("metrics")]
    out: dict[str, Any] = {"total_steps": len(steps)}
    if measured:
        out.update(total_prompt_tokens=sum(m["prompt_tokens"] for m in measured),
                   total_completion_tokens=sum(m["completion_tokens"] for m in measured))
    if record.get("kind") == "agent":
        mask = str((record.get("tokens") or {}).get("mask", ""))
        out["extra"] = {"trained_tokens": mask.count("1"), "response_tokens": len(mask)}
    return out


def _unmapped(record: dict[str, Any], kind: str) -> dict[str, Any]:
    """Everything of the record that no ATIF field took, as written (reward, verdict, grader, diff,
    harness, the task's prompt, the loss mask and turn positions)."""
    extra = {k: v for k, v in record.items() if k not in MAPPED[kind]}
    if kind == "agent":
        extra["tokens"] = {k: v for k, v in (record.get("tokens") or {}).items() if k not in TOKENS_MAPPED}
    return extra


def _episode_name(record: dict[str, Any]) -> str:
    return f"{record.get('group', '?')}@{record.get('split', 'train')}/{record.get('step')}"


def _timestamp(at: Any) -> str | None:
    if not isinstance(at, int | float) or isinstance(at, bool):
        return None
    return datetime.fromtimestamp(at, UTC).isoformat()


def _drop_none(value: Any) -> Any:
    """ATIF's optional fields left out when empty (Harbor writes them so); an ``extra`` stays as is."""
    if isinstance(value, dict):
        return {k: v if k == "extra" else _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value
