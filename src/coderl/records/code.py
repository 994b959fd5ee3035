"""The record of one code RL sample, from what verl 0.9.1 hands the reward function.

verl gives the reward the decoded response (assistant turns, tool calls and tool responses, with
special tokens skipped) and an ``extra_info`` into which the agent loop's ``extra_fields`` are
merged: ``raw_prompt`` (the prompt's messages, added by verl's AgentLoopWorker; the v1 trainer's
transfer-queue worker, main_ppo's default, does not add it: the viewer then takes the prompt from
verl's ``rollout_data_dir`` dump, matched by ``response_sha1``, the response text's hash) and
``extras["coderl_tool_runs"]`` (each sandbox call's request and result, put there by our
`coderl.verl.tool` tool through the trajectory's ``agent_data``). The judge's reply
holds the per-test verdicts. No extra pass over the model or the sandbox is made for a record.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from coderl.judge.final_answer import TOOL_CALL_BLOCK
from coderl.records.writer import group_key
from coderl.swe.hack_signals import record_block

TOOL_RUNS_KEY = "coderl_tool_runs"  # in agent_data.extra_fields["extras"], appended to by the code tool
_TOOL_RESPONSE = re.compile(r"<tool_response>\s*(.*?)\s*(?:</tool_response>|\Z)", re.S)
_ROLE_HEAD = re.compile(r"\A\s*assistant[ \t]*\n")
_ROLE_TAIL = re.compile(r"\n?\s*user\s*\Z")


def code_record(data_source: str, solution_str: str, extra_info: dict[str, Any], judged: dict[str, Any],
                scored: dict[str, Any], answer: str) -> dict[str, Any]:
    """One sample: prompt, turns, tool runs, final answer, the judge's per-test verdicts, reward."""
    return {"kind": "code", "group": group_key(data_source, extra_info), "data_source": str(data_source),
            "index": extra_info.get("index"), "reward": scored.get("score", 0.0), "verdict": scored.get("verdict"),
            "sandbox_error": int(scored.get("sandbox_error", 0)), "tool_calls": int(scored.get("tool_calls", 0)),
            "tests_passed": scored.get("tests_passed", 0), "tests_total": scored.get("tests_total", 0),
            "judge_s": scored.get("judge_s", 0.0), "error": scored.get("error", ""),
            "prompt": messages(extra_info.get("raw_prompt")), "turns": response_turns(solution_str),
            "response_sha1": response_sha1(solution_str),
            "tool_runs": [dict(r) for r in ((extra_info.get("extras") or {}).get(TOOL_RUNS_KEY) or [])
                          if isinstance(r, dict)],
            "answer": answer, "judge": judge_details(judged), "hack": record_block(scored)}


def response_sha1(response: str) -> str:
    """The key joining a record to verl's rollout dump line of the same response (its ``output``)."""
    return hashlib.sha1(response.encode("utf-8", "replace")).hexdigest()


def messages(raw: Any) -> list[dict[str, str]]:
    """Chat messages as ``{role, content}`` (verl hands them as a numpy array of dicts)."""
    if raw is None:
        return []
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    out = []
    for m in list(raw):
        if isinstance(m, dict):
            out.append({"role": str(m.get("role", "")), "content": str(m.get("content") or "")})
    return out


def response_turns(response: str) -> list[dict[str, Any]]:
    """The decoded multi-turn response as turns: assistant text (tool-call blocks taken out and
    parsed) and tool responses. The role lines the chat template leaves once special tokens are
    skipped (``assistant``, ``user``) are dropped."""
    turns: list[dict[str, Any]] = []
    pos = 0
    for match in _TOOL_RESPONSE.finditer(response):
        _assistant(turns, response[pos:match.start()])
        turns.append({"role": "tool", "content": match.group(1)})
        pos = match.end()
    _assistant(turns, response[pos:])
    return turns


def _assistant(turns: list[dict[str, Any]], text: str) -> None:
    text = _ROLE_TAIL.sub("", _ROLE_HEAD.sub("", text, count=1)) if turns else _ROLE_TAIL.sub("", text)
    calls = [_call(body) for body in TOOL_CALL_BLOCK.findall(text)]
    content = TOOL_CALL_BLOCK.sub("", text).strip()
    if content or calls:
        turns.append({"role": "assistant", "content": content, "tool_calls": calls})


def _call(body: str) -> dict[str, Any]:
    try:
        call = json.loads(body)
    except json.JSONDecodeError:
        return {"name": "?", "arguments": body, "ill_formed": True}
    if not isinstance(call, dict):
        return {"name": "?", "arguments": body, "ill_formed": True}
    return {"name": str(call.get("name", "?")), "arguments": call.get("arguments", {})}


def judge_details(judged: dict[str, Any]) -> dict[str, Any]:
    """The judge's reply without the bulk: per test its verdict, message, time and output tails."""
    tests = []
    for case in judged.get("cases") or []:
        run = case.get("run") or {}
        tests.append({"verdict": case.get("verdict"), "message": case.get("message", ""),
                      "status": run.get("status"), "wall_s": run.get("wall_s"), "cpu_s": run.get("cpu_s"),
                      "stdout": _tail(run.get("stdout")), "stderr": _tail(run.get("stderr"))})
    error = judged.get("error") or {}
    return {"verdict": judged.get("verdict"), "compile_message": judged.get("compile_message", ""),
            "extraction_rule": judged.get("extraction_rule"), "code": judged.get("code", ""),
            "wall_s": judged.get("wall_s"), "tests": tests,
            "error": f"{error.get('type', '')}: {error.get('message', '')}" if error else ""}


def _tail(text: Any, limit: int = 400) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else "..." + text[-limit:]


def tool_run(args: dict[str, Any], shown: str, metrics: dict[str, Any], seconds: float) -> dict[str, Any]:
    """One code-tool call for the record: the request the model made (code, language, timeout),
    the sandbox's status and time, what the model was shown (status line, output tails), and the
    call's wall time seen by the tool."""
    return {"language": str(args.get("language") or "python"), "code": str(args.get("code") or ""),
            "timeout": args.get("timeout"), "status": metrics.get("status", "error"),
            "sandbox_error": int(metrics.get("sandbox_error", 0)), "run_wall_s": metrics.get("wall_s"),
            "shown": shown, "seconds": round(seconds, 3)}
