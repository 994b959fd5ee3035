"""Synthetic code RL runs for the viewer's tests and benchmark, written by the REAL record writer
(`coderl.records`) from responses shaped as verl hands them to the reward (decoded multi-turn text,
``extra_info`` with ``raw_prompt`` and the tool's runs): only the model and the sandbox are
replaced by a deterministic script, so runs of any size are cheap to make."""

from __future__ import annotations

import json
import random
from pathlib import Path

from coderl.records.code import code_record, tool_run
from coderl.records.writer import RecordSettings, write_record
from coderl.swe.hack_signals import judged_signals

VERDICTS = ("accepted", "wrong_answer", "runtime_error", "time_limit", "sandbox_error", "no_code")
PROMPT = ("You are given two integers a and b on one line. Print their sum. Constraints: 1 <= a, b <= 10^9. "
          "Write a complete Python program that reads stdin and writes stdout; you may run code first. ") * 3


def response(tool_calls: int, solved: bool, rng: random.Random) -> tuple[str, str, list[dict]]:
    """A decoded multi-turn response with ``tool_calls`` sandbox runs, its final answer, the runs."""
    parts, runs = [], []
    for k in range(tool_calls):
        code = f"a, b = {rng.randint(1, 99)}, {rng.randint(1, 99)}\nprint(a + b)  # try {k}"
        call = json.dumps({"name": "code_interpreter", "arguments": {"code": code}})
        shown = f"status: ok\nstdout:\n{rng.randint(2, 198)}"
        parts.append(f"Let me check case {k}.\n<tool_call>\n{call}\n</tool_call>\nuser\n<tool_response>\n{shown}\n"
                     f"</tool_response>\nassistant\n")
        runs.append(tool_run({"code": code}, shown, {"status": "ok", "wall_s": 0.02}, 0.05 + 0.01 * k))
    answer = "```python\na, b = map(int, input().split())\nprint(a + b)\n```" if solved else \
        "```python\nprint(int(input()) * 2)\n```"
    return "".join(parts) + "Final program:\n" + answer, answer, runs


def write_code_run(record_dir: Path, samples: int, *, group_size: int = 4, steps: int = 5, seed: int = 0) -> None:
    """``samples`` records over ``steps`` training steps, GRPO groups of ``group_size``."""
    rng = random.Random(seed)
    settings = RecordSettings(directory=str(record_dir))
    per_step = max(1, samples // steps)
    for i in range(samples):
        step = min(i // per_step, steps - 1)
        verdict = rng.choices(VERDICTS, weights=(40 + 8 * step, 30, 10, 8, 2, 5))[0]
        calls = rng.randint(0, 3) if verdict != "no_code" else 0
        text, answer, runs = response(calls, verdict == "accepted", rng)
        extra_info = {"index": i // group_size, "split": "train", "max_global_steps": step,
                      "raw_prompt": [{"role": "user", "content": f"Problem {i // group_size}: {PROMPT}"}],
                      "extras": {"coderl_tool_runs": runs}}
        passed = 3 if verdict == "accepted" else rng.randint(0, 2)
        # every 7th wrong answer exited before the judge's completion signal (reward-hack telemetry)
        early = verdict == "wrong_answer" and i % 7 == 0
        judged = {"verdict": verdict, "cases": [
            {"verdict": "accepted" if k < passed else verdict,
             "message": "the tests did not run to the end (no completion signal)" if early and k == passed else "",
             "run": {"status": "ok", "wall_s": 0.01, "stdout": f"{k}\n", "stderr": ""}} for k in range(3)]}
        scored = {"score": 1.0 if verdict == "accepted" else 0.0, "verdict": verdict,
                  "sandbox_error": int(verdict == "sandbox_error"), "tool_calls": calls, "tests_passed": passed,
                  "tests_total": 3, **judged_signals(judged)}
        write_record(settings, extra_info, code_record("livecodebench", text, extra_info, judged, scored, answer))
