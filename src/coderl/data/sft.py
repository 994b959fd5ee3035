"""Gen-Verse/Open-AgentRL-SFT-3K -> verl multi-turn SFT parquet (`messages`, `tools`).

The recipe's filters: some assistant message has tool calls, some message is a tool response, the
last assistant message holds a ```python block and no \\boxed (which drops the math traces). Tool-
call arguments are stored as JSON strings (pyarrow would otherwise merge argument keys across
rows), and every row's tools are the one `code_interpreter` schema the RL stage offers, so SFT
and RL show the model the same tool. Every kept row must render with the chat template.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coderl.data.common import (
    BuildReport,
    Drop,
    convert,
    parse_json_field,
    read_rows,
    seeded_split,
    write_parquet,
)
from coderl.errors import BadRequest

TOOL_NAME = "code_interpreter"


def tool_schema() -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": TOOL_NAME,
        "description": "Run a program in a sandbox and see its output. Python by default; state is not kept "
                       "between calls. Print what you want to see.",
        "parameters": {"type": "object", "properties": {
            "code": {"type": "string", "description": "the complete program to run"},
            "language": {"type": "string", "description": "python (default), cpp, c, java, javascript, go, rust"},
            "timeout": {"type": "number", "description": "seconds, at most the configured maximum"}},
            "required": ["code"]}}}


def sft_row(row: dict[str, Any]) -> dict[str, Any]:
    """One Open-AgentRL row -> ``{"messages", "tools"}`` (raises Drop with the reason)."""
    messages = parse_json_field(row.get("messages"), "messages")
    if not isinstance(messages, list) or not messages:
        raise Drop("no messages", str(messages)[:80])
    out: list[dict[str, Any]] = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            raise Drop("unknown message role", str(m)[:80])
        content = m.get("content") or ""
        if not isinstance(content, str):
            raise Drop("message content is not text", str(content)[:80])
        msg: dict[str, Any] = {"role": m["role"], "content": content}
        calls = m.get("tool_calls")
        if calls:
            if not isinstance(calls, list):
                raise Drop("tool_calls is not a list", str(calls)[:80])
            msg["tool_calls"] = [_tool_call(c) for c in calls]
        out.append(msg)
    if not any(m.get("tool_calls") for m in out if m["role"] == "assistant"):
        raise Drop("no assistant tool call", out[-1]["content"][:80])
    if not any(m["role"] == "tool" for m in out):
        raise Drop("no tool response", out[-1]["content"][:80])
    last = next(m for m in reversed(out) if m["role"] == "assistant")
    if "```python" not in last["content"] or "```" not in last["content"].split("```python", 1)[1]:
        raise Drop("last assistant message has no python block", last["content"][-80:])
    if "\\boxed" in last["content"]:
        raise Drop("last assistant message has \\boxed", last["content"][-80:])
    return {"messages": out, "tools": [tool_schema()]}


def _tool_call(call: Any) -> dict[str, Any]:
    fn = call.get("function", call) if isinstance(call, dict) else None
    if not isinstance(fn, dict) or fn.get("name") != TOOL_NAME:
        raise Drop("calls a tool other than code_interpreter", str(call)[:80])
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            raise Drop("tool-call arguments are not JSON", args[:80]) from None
    if not isinstance(args, dict) or not isinstance(args.get("code"), str):
        raise Drop("tool-call arguments lack code", str(args)[:80])
    return {"type": "function", "function": {"name": TOOL_NAME, "arguments": json.dumps(args, ensure_ascii=False)}}


def build_sft(source: str, out_dir: str | Path, *, tokenizer_path: str | None = None, limit: int | None = None,
              val_fraction: float = 0.02, seed: int = 42) -> BuildReport:
    """Write train.parquet and validation.parquet (+ report.json) under out_dir."""
    report = BuildReport("sft")
    tokenizer = load_chat_tokenizer(tokenizer_path)

    def build(row: dict[str, Any]) -> dict[str, Any]:
        built = sft_row(row)
        _render(tokenizer, built)
        return built

    rows = list(convert(report, read_rows(source, limit=limit), build, "sft"))
    report.kept = len(rows)
    report.check_nonempty()
    out = Path(out_dir)
    for split, split_rows in zip(("train", "validation"), seeded_split(rows, val_fraction, seed), strict=True):
        if split_rows:
            report.outputs.append(write_parquet(split_rows, out / f"{split}.parquet"))
    report.save(out)
    return report


def load_chat_tokenizer(path: str | None) -> Any:
    """The tokenizer whose chat template renders SFT rows (the Qwen BPE when none is named); a
    path that holds none, or one without a chat template, is the caller's one-line error."""
    from transformers import AutoTokenizer

    if path is None:
        from coderl.data.qwen_tokenizer import build_qwen_tokenizer

        path = str(build_qwen_tokenizer())
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as exc:
        raise BadRequest(f"cannot load a tokenizer from {path!r} ({type(exc).__name__})") from None
    if not getattr(tokenizer, "chat_template", None):
        raise BadRequest(f"the tokenizer at {path!r} has no chat template to render the rows with")
    return tokenizer


def _render(tokenizer: Any, row: dict[str, Any]) -> None:
    try:
        tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
    except Exception as exc:  # noqa: BLE001 - jinja raises all sorts; the row is what is wrong
        raise Drop("does not render with the chat template", f"{type(exc).__name__}: {exc}") from None
