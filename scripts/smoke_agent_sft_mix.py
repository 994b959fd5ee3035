"""The agent smoke run's SFT mix: `coderl data swe-sft`'s gold episodes that edit with one sed line
(the file numbered with `nl -ba`, the line rewritten, the failing tests run, submit), each with a
WRONG twin that rewrites the line with its old text (a no-op edit) and then submits. The code smoke
run makes half its SFT answers wrong for the same reason: a model tuned on gold alone resolves every
episode or none, GRPO groups score uniformly and the gradient is zero; with both, sampled episodes
differ inside a group from the first step. The other gold episodes (a whole file rewritten through
a heredoc or a Python replacement) are left out: a 2-layer model sampled at temperature 1 does not
copy a whole file back exactly, and learning to try would cost the smoke run most of its SFT time.

Nothing in a twin is invented: its turns are the gold episode's own (the harness's prompt, the
look command and its real output, the submit turn) and the edit's observation is the one sed
really gives (no output, exit 0) - only the replacement text differs. Gold episodes that verify
with the tests keep doing so; a twin submits straight after its edit (its test output would be
one nobody ran).

    python scripts/smoke_agent_sft_mix.py SWE_SFT_DIR OUT_DIR
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd

SED_LINE = re.compile(r"^sed -i '(\d+)s\|\.\*\|(.*)\|' (\S+)$", re.S)
CALL = re.compile(r"<tool_call>\n(.*)\n</tool_call>", re.S)
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def command_of(message: dict[str, Any]) -> str | None:
    match = CALL.search(message.get("content") or "") if message["role"] == "assistant" else None
    return json.loads(match.group(1))["arguments"]["command"] if match else None


def with_command(message: dict[str, Any], command: str) -> dict[str, Any]:
    """The assistant turn with its one bash call's command replaced, written as the gold turns write
    it (coderl.data.swe_gold_turns.tool_call)."""
    call = json.dumps({"name": "bash", "arguments": {"command": command}}, ensure_ascii=False)
    return {**message, "content": CALL.sub(lambda _: f"<tool_call>\n{call}\n</tool_call>", message["content"])}


def wrong_twin(messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The episode with its sed edit undone (None: the episode does not edit with one sed line
    after numbering the file with `nl -ba`, whose output gives the old line)."""
    for k, message in enumerate(messages):
        match = SED_LINE.match(command_of(message) or "")
        if not match:
            continue
        line, path = int(match.group(1)), match.group(3)
        old = _numbered_line(messages[:k], path, line)
        submit = next((m for m in messages[k + 1:] if command_of(m) == SUBMIT), None)
        if old is None or submit is None or set(old) & set("|'\\&\n"):
            return None
        return [*messages[:k], with_command(message, f"sed -i '{line}s|.*|{old}|' {path}"), messages[k + 1], submit]
    return None


def _numbered_line(messages: list[dict[str, Any]], path: str, line: int) -> str | None:
    for k, message in enumerate(messages[:-1]):
        if command_of(message) == f"nl -ba {path}" and messages[k + 1]["role"] == "tool":
            output = json.loads(messages[k + 1]["content"]).get("output", "")
            for text in output.splitlines():
                number, _, rest = text.partition("\t")
                if number.strip() == str(line):
                    return rest
    return None


def main(source: Path, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    gold = pd.read_parquet(source / "train.parquet")
    rows = []
    for _, row in gold.iterrows():
        twin = wrong_twin([dict(m) for m in row["messages"]])
        if twin is not None:
            rows += [row.to_dict(), {**row.to_dict(), "messages": twin}]
    if not rows:
        raise SystemExit(f"error: no gold episode in {source} edits with one sed line (run swe-sft with --variants 2)")
    mixed = pd.DataFrame(rows).sample(frac=1.0, random_state=0)
    mixed.to_parquet(out / "train.parquet")
    # verl's SFT trainer wants a validation file; with every episode kept for training, a few of them
    validation = source / "validation.parquet"
    (pd.read_parquet(validation) if validation.is_file() else mixed.iloc[:2]).to_parquet(out / "validation.parquet")
    print(f"sft mix: {len(rows) // 2} of {len(gold)} gold episodes edit with sed; with their wrong twins "
          f"{len(rows)} rows -> {out / 'train.parquet'}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: smoke_agent_sft_mix.py SWE_SFT_DIR OUT_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
