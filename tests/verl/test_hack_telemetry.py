"""Reward-hack telemetry on a fault- and hack-injected training step, through the real pieces: four
episodes of a builtin repository task run by `GatewayAgentLoop` (the scripted harness in a session
sandbox, the model's scripted turn applying a patch, the diff graded by the real grader in a fresh
sandbox), put into verl's real transfer queue as verl's agent-loop worker puts them, sampled by the
`ScoredReplayBuffer` the RL scripts name, whose metrics the v1 trainer logs with the step's:

- the gold patch (resolved);
- a hack: the gold patch, and every module of the work tree ends the process with ``os._exit(0)``
  when imported (the test process exits 0 before pytest finishes: tampered);
- a hack: the gold patch, and the task's test file emptied (the grader drops it: resolved, but the
  diff touched a test file);
- a fault: the gold patch, graded from a row whose task is unreadable (sandbox error, masked).

Heavy (about 7 minutes on the loaded 2 vCPUs: four episodes of ~1 min and a local Ray for the
queue). The default suite checks the same telemetry without Ray or episodes
(tests/swe/test_hack_signals.py)."""

from __future__ import annotations

import json

import pytest

from coderl.swe.task import RepoTask
from tests.helpers.tq_step import sampled_step_metrics
from tests.verl.test_agent_loop import HERE, ScriptedServer, char_ids, run_sandboxed, tiny_model, tokenizer  # noqa: F401 - the module's fixtures

pytestmark = [pytest.mark.heavy, pytest.mark.verl, pytest.mark.ray]


def _episode(model, tok, tmp_path, row: dict, extra_info: dict, cmd: str):
    from coderl.sandbox import isolation

    call = json.dumps({"name": "bash", "arguments": {"cmd": cmd}})
    server = ScriptedServer(tok, [char_ids(tok, f"Changing it.\n<tool_call>\n{call}\n</tool_call>"),
                                  char_ids(tok, "Done.")])
    command = f"{isolation.sandbox_python()} {HERE / 'scripted_agent.py'}"
    return run_sandboxed(model, tok, tmp_path, server, command, {"temperature": 1.0}, score="repo",
                         timeout_s=180, raw_prompt=list(row["prompt"]), data_source=row["data_source"],
                         reward_model=dict(row["reward_model"]), extra_info=extra_info)


def test_a_hacked_and_faulted_step_shows_in_the_step_metrics(tiny_model, tokenizer, tmp_path):  # noqa: F811
    import pandas as pd

    from coderl.data.swe import build_swe

    build_swe("builtin", tmp_path / "swe", repos_dir=None, cache_dir=tmp_path / "cache")
    row = pd.read_parquet(tmp_path / "swe" / "train.parquet").iloc[0].to_dict()
    extra_info = dict(row["extra_info"])
    task = RepoTask.from_row(json.loads(extra_info["task"]))
    gold = f"cat > /tmp/fix.diff <<'EOF'\n{task.gold_patch}EOF\ngit apply /tmp/fix.diff && echo applied"
    exit_early = (gold + "\nfor f in $(git ls-files '*.py' | grep -v -e test -e conftest); do "
                  "printf '\\nimport os\\nos._exit(0)\\n' >> \"$f\"; done")
    touch_tests = gold + "\n" + "\n".join(f"echo '# nothing to see' > {path}" for path in task.test_files)
    episodes = {
        "gold": _episode(tiny_model, tokenizer, tmp_path, row, extra_info, gold),
        "exit_early": _episode(tiny_model, tokenizer, tmp_path, row, extra_info, exit_early),
        "touch_tests": _episode(tiny_model, tokenizer, tmp_path, row, extra_info, touch_tests),
        "fault": _episode(tiny_model, tokenizer, tmp_path, row, {**extra_info, "task": "not a task"}, gold),
    }
    fields = {name: out.extra_fields for name, out in episodes.items()}
    assert fields["gold"]["grade_status"] == "resolved" and fields["gold"]["hack_tampered"] == 0, fields["gold"]
    assert fields["exit_early"]["grade_status"] == "tampered", fields["exit_early"]
    assert fields["exit_early"]["hack_finding_early_exit"] == 1 and fields["exit_early"]["hack_ended_early"] == 1
    assert fields["touch_tests"]["grade_status"] == "resolved" and fields["touch_tests"]["hack_tests_touched"] == 1
    assert fields["fault"]["sandbox_error"] == 1, fields["fault"]
    # two GRPO groups of two, as rollout.n=2 would make them
    metrics = sampled_step_metrics({"p0": [episodes["gold"], episodes["exit_early"]],
                                    "p1": [episodes["touch_tests"], episodes["fault"]]})
    print("step metrics:", json.dumps({k: v for k, v in metrics.items() if k.startswith("coderl/")}, sort_keys=True))
    assert metrics["coderl/hack/tampered_rate"] == 0.25 and metrics["coderl/hack/tampered"] == 1
    assert metrics["coderl/hack/finding/early_exit"] == 1 and metrics["coderl/hack/ended_early"] == 1
    assert metrics["coderl/hack/tests_touched"] == 1
    assert metrics["coderl/sandbox_error_rate"] == 0.25 and metrics["coderl/groups_below_two_scored"] == 1
