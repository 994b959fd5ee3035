"""Reward-hack telemetry without episodes or Ray (the real step is tests/verl/test_hack_telemetry.py,
heavy): the finding-class taxonomy covers every finding the graders write, an episode's signals from
its grade, the code reward's, the step's ``coderl/hack/...`` metrics from verl's own agent-loop
outputs as the sampler reads them, and the same signals in the records, the view's overview, the
ATIF trajectory and the Harbor trial."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from coderl.records.atif import atif_trajectory
from coderl.records.code import code_record
from coderl.records.harbor_job import RECORD_FACTS
from coderl.swe.grade_status import GradeStatus
from coderl.swe.grader import GradeResult
from coderl.swe.hack_signals import (
    CLASSES,
    KEYS,
    OTHER,
    episode_signals,
    finding_class,
    judged_signals,
    step_metrics,
)
from coderl.view.reader import normalise, overview

SWE = Path(__file__).resolve().parents[2] / "src" / "coderl" / "swe"
#: the modules whose sentences are the graders' findings (one that is not there yet is skipped)
GRADERS = ("verdicts.py", "unittest_verdicts.py")


def written_findings(path: Path) -> list[str]:
    """The fixed words of every finding ``path`` writes: the string (its literal parts, for an
    f-string) appended to a ``findings``/``found`` list or added to ``found``."""
    def words(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return " ".join(v.value for v in node.values if isinstance(v, ast.Constant))
        return None

    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append":
            target = node.func.value
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if name in ("findings", "found") and node.args and words(node.args[0]) is not None:
                out.append(words(node.args[0]))
        elif isinstance(node, ast.AugAssign) and getattr(node.target, "id", "") == "found":
            items = [n.elt for n in ast.walk(node.value) if isinstance(n, ast.ListComp)]
            items += [e for n in ast.walk(node.value) if isinstance(n, ast.List) for e in n.elts]
            out += [w for item in items if (w := words(item)) is not None]
    return out


@pytest.mark.parametrize("module", GRADERS)
def test_every_finding_the_graders_write_has_a_class(module):
    path = SWE / module
    if not path.exists():
        pytest.skip(f"{module} is not in this tree")
    findings = written_findings(path)
    assert len(findings) >= 5, findings
    assert {f: finding_class(f) for f in findings if finding_class(f) == OTHER} == {}


def test_finding_classes():
    assert finding_class("the test process exited 0 before pytest finished") == "early_exit"
    assert finding_class("exit status 0 with 2 failures reported") == "exit_mismatch"
    assert finding_class("record 3 out of sequence (expected 2)") == "forged_record"
    assert finding_class("tests/test_a.py::t: reported passed, but its call raised (AssertionError)") == "report_mismatch"
    assert finding_class("replaced during the run: _pytest.runner.call_and_report") == "replaced_function"
    assert finding_class("a conftest changed from the base commit: conftest.py") == "changed_file"
    assert finding_class("something no grader says yet") == OTHER and CLASSES[-1] == OTHER


def test_an_episodes_signals_from_its_grade():
    tampered = GradeResult("t", GradeStatus.TAMPERED, 0.0, findings=[
        "the test process exited 0 before pytest finished", "a test module changed from the base commit: t.py"])
    signals = episode_signals(tampered)
    assert list(signals) == list(KEYS)
    assert signals["hack_tampered"] == 1 and signals["hack_ended_early"] == 1
    assert signals["hack_finding_early_exit"] == 1 and signals["hack_finding_changed_file"] == 1
    assert sum(signals[f"hack_finding_{c}"] for c in CLASSES) == 2
    touched = episode_signals(GradeResult("t", GradeStatus.RESOLVED, 1.0, tests_touched=["tests/test_a.py"]))
    assert touched["hack_tests_touched"] == 1 and touched["hack_tampered"] == 0
    cut = episode_signals(GradeResult("t", GradeStatus.UNRESOLVED, 0.0,
                                      message="the test process ended before pytest finished (exit 3)"))
    assert cut["hack_ended_early"] == 1 and cut["hack_tampered"] == 0
    assert set(episode_signals(None).values()) == {0}
    judged = judged_signals({"cases": [{"verdict": "wrong_answer",
                                        "message": "the tests did not run to the end (no completion signal)"}]})
    assert judged["hack_ended_early"] == 1 and list(judged) == list(KEYS)


@pytest.mark.verl
def test_step_metrics_from_verls_agent_loop_outputs():
    """The sampler's view: verl's AgentLoopOutput extra_fields (the agent loop's own keys) and the code
    reward's extras under reward_extra_info, as `ScoredReplayBuffer` reads them."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

    from coderl.verl.scored_grpo import hack_fields

    def output(extra):
        return AgentLoopOutput(prompt_ids=[1], response_ids=[2], response_mask=[1], reward_score=0.0, num_turns=1,
                               metrics=AgentLoopMetrics(), extra_fields=extra)

    tampered = episode_signals(GradeResult("t", GradeStatus.TAMPERED, 0.0,
                                           findings=["the test process exited 0 before pytest finished"]))
    outs = [output({**tampered, "sandbox_error": 0}), output({**episode_signals(), "sandbox_error": 1}),
            output({"reward_extra_info": {**judged_signals({"cases": [{"message": "the tests did not run to the end"}]}),
                                          "score": 0.0}}),
            output({"reward_extra_info": {"score": 1.0}})]  # a reward from before the telemetry: zeros
    metrics = step_metrics([hack_fields(o.extra_fields) for o in outs])
    assert metrics["coderl/hack/tampered_rate"] == 0.25 and metrics["coderl/hack/tampered"] == 1
    assert metrics["coderl/hack/ended_early"] == 2 and metrics["coderl/hack/finding/early_exit"] == 1
    assert metrics["coderl/hack/tests_touched"] == 0 and metrics["coderl/hack/finding/other"] == 0
    assert step_metrics([])["coderl/hack/tampered_rate"] == 0.0


def test_records_view_atif_and_harbor_carry_the_signals():
    scored = {"score": 0.0, "verdict": "wrong_answer", **judged_signals(
        {"cases": [{"message": "the tests did not run to the end (no completion signal)"}]})}
    record = code_record("lcb", "```python\nimport os\nos._exit(0)\n```", {"index": 3, "raw_prompt": [
        {"role": "user", "content": "sum two numbers"}]}, {"verdict": "wrong_answer", "cases": []}, scored, "")
    assert record["hack"] == {"tampered": 0, "tests_touched": 0, "ended_early": 1, "findings": {}}
    agent = {"kind": "agent", "group": "g", "step": 2, "reward": 0.0, "grade_status": "tampered",
             "hack": {"tampered": 1, "tests_touched": 1, "ended_early": 1, "findings": {"early_exit": 1}}}
    samples = [normalise(json.loads(json.dumps(r)), 2, "train") for r in (record, agent)]
    (row,) = overview(samples)
    assert row["hack"] == {"tampered": 1, "tests_touched": 1, "ended_early": 2, "findings": {"early_exit": 1}}
    assert atif_trajectory({**record, "step": 2})["extra"]["hack"] == record["hack"]
    assert "hack" in RECORD_FACTS
