"""What an agent does wrong is the episode's outcome, never an exception out of the verl agent loop
(`coderl_gateway_agent`, score: repo): a real harness process in a real session sandbox over a
builtin task's snapshot, the real gateway, the real grader; the model is verl's server-manager
seam answered from a script. Each harness first takes one model turn (so the response holds
sampled tokens) and then misbehaves; the outcome scores 0 and keeps its mask (it trains), where
a failure of ours (``sandbox_error``) would zero it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coderl.sandbox import isolation
from coderl.sandbox.session_diffs import MAX_DIFF_BYTES
from tests.helpers.require import require
from tests.verl.test_agent_loop import HERE, ScriptedServer, char_ids, run_sandboxed

pytestmark = pytest.mark.verl


@pytest.fixture(scope="module")
def swe_row(tmp_path_factory):
    import pandas as pd

    from coderl.data.swe import build_swe

    require(isolation.bwrap_path() is not None, "bubblewrap missing (scripts/setup.sh installs it)")
    root = tmp_path_factory.mktemp("swe")
    build_swe("builtin", root / "swe", repos_dir=None, cache_dir=root / "cache")
    return pd.read_parquet(root / "swe" / "train.parquet").iloc[0].to_dict()


def run_episode(tiny_model, tokenizer, tmp_path, row, command: str, server: ScriptedServer):
    return run_sandboxed(tiny_model, tokenizer, tmp_path, server, command, {"temperature": 1.0}, score="repo",
                         raw_prompt=list(row["prompt"]), data_source=row["data_source"],
                         reward_model=dict(row["reward_model"]), extra_info=dict(row["extra_info"]))


def one_turn(tokenizer) -> ScriptedServer:
    call = json.dumps({"name": "bash", "arguments": {"cmd": "ls"}})
    return ScriptedServer(tokenizer, [char_ids(tokenizer, f"Looking.\n<tool_call>\n{call}\n</tool_call>"),
                                      char_ids(tokenizer, "Done.")])


# what the harness does after its model turn -> (grade status, what agent_error says, other fields)
MISDEEDS = {
    "file_over_the_diff_cap": (f"head -c {MAX_DIFF_BYTES + (4 << 20)} /dev/urandom > big.bin",
                               "no_patch", f"larger than {MAX_DIFF_BYTES >> 20} MiB", {}),
    "unreadable_file": ("echo secret > hidden.py && chmod 000 hidden.py", "no_patch", "hidden.py", {}),
    # git skips a directory it cannot open: the rest of the change is graded (here: none of it)
    "unreadable_directory": ("mkdir -p private && echo x > private/f.py && chmod 000 private", "unresolved", None, {}),
    "floods_its_output": ("yes flood", "unresolved", None, {"agent_output_limit": 1, "agent_exit_code": -1}),
}


@pytest.mark.parametrize("name", sorted(MISDEEDS))
def test_a_misbehaving_harness_is_an_outcome(name, tiny_model, tiny_tokenizer, swe_row, tmp_path):
    misdeed, status, error, fields = MISDEEDS[name]
    command = f"{isolation.sandbox_python()} {HERE / 'scripted_agent.py'} && {misdeed}"
    out = run_episode(tiny_model, tiny_tokenizer, tmp_path, swe_row, command, one_turn(tiny_tokenizer))
    extra = out.extra_fields
    assert (extra["sandbox_error"], extra["grade_status"], out.reward_score) == (0, status, 0.0), extra
    assert "verdict" not in extra, extra  # a judge's word: no judge ran
    assert error in extra["agent_error"] if error else "agent_error" not in extra, extra
    assert {k: extra[k] for k in fields} == fields, extra
    assert any(out.response_mask), "an outcome of the agent's is trained on (reward 0), never masked"


def test_a_harness_that_exits_at_once_is_an_outcome(tiny_model, tiny_tokenizer, swe_row, tmp_path):
    server = one_turn(tiny_tokenizer)
    out = run_episode(tiny_model, tiny_tokenizer, tmp_path, swe_row, "exit 3", server)
    extra = out.extra_fields
    assert (extra["sandbox_error"], extra["agent_exit_code"], extra["grade_status"], out.reward_score) == \
        (0, 3, "unresolved", 0.0), extra
    assert server.calls == [] and out.response_mask == [0]  # it never asked the model: nothing to train on


def test_a_host_harness_that_floods_its_output_keeps_a_tail(tmp_path):
    """On the host nothing caps a harness's output, so only a tail is kept while the rest streams
    past: 256 MiB printed, the episode's process peaks far below that (it used to hold it all).
    The peak is this process's own (VmHWM): ru_maxrss would carry over the forking parent's."""
    script = f"""
import asyncio, re
from pathlib import Path
from coderl.swe.harness import run_on_host
flood = "head -c {256 << 20} /dev/zero | tr '\\\\0' x; echo; echo the-end"
r = asyncio.run(run_on_host(flood, workdir=Path({str(tmp_path)!r}), task="t", gateway_url="http://127.0.0.1:9",
                            session_id="s", model="m", timeout_s=120))
print(r.exit_code, r.timed_out, len(r.output_tail), repr(r.output_tail[-10:]))
print(int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read())[1]) >> 10)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result, peak_mib = done.stdout.splitlines()
    assert result == "0 False 4003 'x\\nthe-end\\n'", result
    assert int(peak_mib) < 128, f"the harness's output was held in memory: peak {peak_mib} MiB"
