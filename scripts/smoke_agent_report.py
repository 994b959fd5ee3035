"""The agent smoke run's report, from the run's own files: RUN/report.json and a table on stdout.

    python scripts/smoke_agent_report.py RUN_DIR

Reads verl's metrics.jsonl (file logger), the episodes' records (rl/records/<step>.jsonl: the token
record the loop returned to verl, the harness's commands, the diff, the grader's result), the
held-out evals' summaries, the stage timings; compares the SFT model's weights with the RL
checkpoint's; and recomputes, with the weights the actor held at each step (the SFT model at step 1,
the actor's own fp32 weights of the step before after), the log-probability of every trained token,
against the one the rollout server returned through the gateway. Not the merged checkpoint: verl's
model merger writes it in bfloat16, whose rounding alone moved step-2 logprobs by up to 0.18.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from smoke_report import weight_change  # the code smoke run's: the largest parameter change of two HF dirs

# mini.yaml's format_error_template: a response with no parsable tool call, one cut at the length limit
FORMAT_ERRORS = ("Tool call error:", "Your previous response reached the output token limit")
METRICS = {  # report name -> verl 0.9.1 metric (trainer/ppo/ray_trainer.py, utils/debug/metrics.py)
    "grad_norm": "actor/grad_norm",
    "score_mean": "critic/score/mean",
    "rollout_actor_prob_diff_max": "training/rollout_probs_diff_max",
    "rollout_actor_prob_diff_mean": "training/rollout_probs_diff_mean",
    "rollout_actor_prob_pearson": "training/rollout_actor_probs_pearson_corr",
    "step_seconds": "timing_s/step",
    "sandbox_error_rate": "coderl/sandbox_error_rate",  # coderl.verl.scored_grpo's sampler
}


def stop_ids(model_dir: Path) -> set[int]:
    """The tokens that end a sampled turn in ``model_dir``'s tokenizer."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    return {tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.eos_token_id}


def stage_seconds(run: Path) -> dict[str, int]:
    return {name: int(s) for name, s in (line.split("\t") for line in (run / "stages.tsv").read_text().splitlines() if line)}


def metric_series(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """``rl_steps`` and each of ``METRICS`` per step."""
    return {"rl_steps": [m["step"] for m in metrics], **{name: [m.get(key) for m in metrics] for name, key in METRICS.items()}}


def rl_metrics(run: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (run / "rl" / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return [{"step": r["step"], **r["data"]} for r in rows if "actor/grad_norm" in r.get("data", {})]


def episodes(run: Path) -> dict[int, list[dict[str, Any]]]:
    """The training episodes' records by step."""
    out: dict[int, list[dict[str, Any]]] = {}
    for path in sorted((run / "rl" / "records").glob("[0-9]*.jsonl"), key=lambda p: int(p.stem)):
        out[int(path.stem)] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def trained_tokens_sampled(record: dict[str, Any], stop_ids: set[int]) -> list[str]:
    """Why a mask-1 token of this record was not sampled (empty: all were). A sampled token lies in
    a turn the gateway recorded as generated (from a turn start up to its end-of-turn token) and
    carries the rollout's logprob; every other token has mask 0 and logprob 0.0."""
    tokens = record["tokens"]
    ids, mask, logprobs = tokens["ids"], tokens["mask"], tokens["logprobs"]
    inside, starts, problems = [False] * len(ids), set(tokens["turn_starts"]), []
    open_turn = False
    for i, token in enumerate(ids):
        open_turn = open_turn or i in starts
        inside[i] = open_turn
        if open_turn and token in stop_ids:
            open_turn = False
    for i, m in enumerate(mask):
        if m == "1" and not inside[i]:
            problems.append(f"token {i} has mask 1 outside every sampled turn")
        if m == "0" and logprobs[i] != 0.0 and not record["sandbox_error"] and not inside[i]:
            problems.append(f"token {i} has a logprob but was not sampled")
    return problems


def recomputed_logprob_diff(model_dir: Path, records: list[dict[str, Any]],
                            actor_state: dict[str, Any] | None = None) -> dict[str, float]:
    """max and mean |rollout logprob - recomputed logprob| over the mask-1 tokens of ``records``,
    the model at ``model_dir`` (with ``actor_state`` loaded into it, when given) scoring each
    episode's prompt + response in one forward pass."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa")
    if actor_state is not None:
        model.load_state_dict(actor_state)
    model.eval()
    diffs: list[float] = []
    for record in records:
        tokens = record["tokens"]
        if "1" not in tokens["mask"] or "prompt_ids" not in tokens:
            continue
        ids = tokens["prompt_ids"] + tokens["ids"]
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
        start = len(tokens["prompt_ids"])
        for i, (m, token, rollout) in enumerate(zip(tokens["mask"], tokens["ids"], tokens["logprobs"], strict=True)):
            if m == "1":
                diffs.append(abs(float(logp[start + i - 1, token]) - rollout))
    return {"max": max(diffs), "mean": mean(diffs), "tokens": len(diffs)} if diffs else {}


def outcome(record: dict[str, Any]) -> str:
    """The repository grader's status of an episode (``no_patch`` when its files made no diff)."""
    return str((record.get("grader") or {}).get("status") or record.get("grade_status") or record.get("verdict") or "none")


def format_errors(record: dict[str, Any]) -> int:
    """mini's format-error messages in the episode: a response without a parsable tool call is NOT
    kept in mini's history (its model raises FormatError before the message is added), so the next
    request rewrites the history the gateway recorded - one drift, one new branch, per error."""
    return sum(t["role"] == "user" and t["content"].startswith(FORMAT_ERRORS) for t in record["turns"])


def step_table(records: list[dict[str, Any]], stop_ids: set[int]) -> dict[str, Any]:
    scored = [r for r in records if not r["sandbox_error"]]
    groups: dict[str, set[float]] = defaultdict(set)
    for r in scored:
        groups[json.dumps(r["prompt"])].add(float(r["reward"] or 0.0))
    problems = [f"episode {i}: {p}" for i, r in enumerate(records) for p in trained_tokens_sampled(r, stop_ids)]
    return {
        "episodes": len(records),
        "resolved_rate": mean(outcome(r) == "resolved" for r in scored) if scored else None,
        "outcomes": dict(sorted(_count(outcome(r) for r in records).items())),
        "rewards": [r["reward"] for r in records],
        "groups_with_reward_variance": [sum(len(s) > 1 for s in groups.values()), len(groups)],
        "turns_per_episode": mean(sum(t["role"] == "assistant" for t in r["turns"]) for r in records),
        "response_tokens_per_episode": mean(len(r["tokens"]["ids"]) for r in records),
        "trained_tokens_per_episode": mean(r["tokens"]["mask"].count("1") for r in records),
        "drifts": sum(r["drifts"] for r in records),
        "drifts_unexplained": sum(r["drifts"] != format_errors(r) for r in records),
        "format_errors": sum(format_errors(r) for r in records),
        "branches": sum(r["branches"] for r in records),
        "sandbox_errors": sum(r["sandbox_error"] for r in records),
        "sandbox_error_episodes_masked": all("1" not in r["tokens"]["mask"] for r in records if r["sandbox_error"]),
        "tests_touched": sum(bool((r.get("grader") or {}).get("tests_touched")) for r in records),
        "mask_problems": problems[:20],
    }


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for item in items:
        out[item] += 1
    return dict(out)


def actor_state(run: Path, step: int) -> dict[str, Any] | None:
    """The actor's fp32 weights that rolled out ``step`` (None at step 1: the SFT model's), from the
    FSDP checkpoint of the step before (one rank: the whole state dict)."""
    import torch

    if step == 1:
        return None
    shard = run / "rl" / "checkpoints" / f"global_step_{step - 1}" / "actor" / "model_world_size_1_rank_0.pt"
    state = torch.load(shard, map_location="cpu", weights_only=False)
    return {k: v.full_tensor() if hasattr(v, "full_tensor") else v for k, v in state.items()}


def main(run: Path) -> int:
    stops = stop_ids(run / "sft" / "merged")
    metrics = rl_metrics(run)
    by_step = episodes(run)
    steps = {step: step_table(records, stops) for step, records in by_step.items()}
    for step, records in by_step.items():
        steps[step]["recomputed_logprob_abs_diff"] = recomputed_logprob_diff(run / "sft" / "merged", records,
                                                                             actor_state(run, step))
    rl_ckpt = sorted((run / "rl" / "checkpoints").glob("global_step_*"), key=lambda p: int(p.name.split("_")[-1]))[-1]
    evals = {name: json.loads((run / "eval" / name / "summary.json").read_text()) for name in ("sft", "rl")}
    report = {
        **metric_series(metrics),
        "steps": steps,
        "rl_checkpoint": str(rl_ckpt),
        "max_weight_change_sft_to_rl": weight_change(run / "sft" / "merged", rl_ckpt / "huggingface_merged"),
        "heldout": {name: {k: s[k] for k in ("tasks", "resolved", "resolved_rate", "sandbox_errors", "statuses",
                                            "tests_touched")} for name, s in evals.items()},
        "figures": sorted(str(p) for p in (run / "figures").glob("*.png")),
        "stage_seconds": stage_seconds(run),
    }
    (run / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print_table(run, report)
    return 0


def print_table(run: Path, report: dict[str, Any]) -> None:
    def fmt(x: Any) -> str:
        return "n/a" if x is None else f"{x:.3g}" if isinstance(x, float) else str(x)

    print(f"agent smoke run: {run}")
    rows = [("resolved rate", "resolved_rate"), ("reward variance (groups)", "groups_with_reward_variance"),
            ("assistant turns / episode", "turns_per_episode"), ("response tokens / episode", "response_tokens_per_episode"),
            ("trained tokens / episode", "trained_tokens_per_episode"), ("drifts", "drifts"), ("mini format errors", "format_errors"),
            ("drifts not from one", "drifts_unexplained"), ("branches", "branches"),
            ("sandbox errors", "sandbox_errors"), ("diffs touching tests", "tests_touched"),
            ("mask 1 off sampled ids", "mask_problems")]
    steps = sorted(report["steps"])
    print(f"  {'RL step':28s}" + "".join(f"{s:>22}" for s in steps))
    for label, key in rows:
        values = [report["steps"][s][key] for s in steps]
        values = [len(v) if key == "mask_problems" else v for v in values]
        print(f"  {label:28s}" + "".join(f"{fmt(v):>22}" for v in values))
    diffs = [report["steps"][s]["recomputed_logprob_abs_diff"] for s in steps]
    print(f"  {'|logprob diff| max / mean':28s}" + "".join(
        f"{fmt(d.get('max')) + ' / ' + fmt(d.get('mean')):>22}" for d in diffs))
    print(f"  {'grad_norm':28s}" + "".join(f"{fmt(g):>22}" for g in report["grad_norm"]))
    print(f"  {'verl prob diff max / mean':28s}" + "".join(
        f"{fmt(a) + ' / ' + fmt(b):>22}" for a, b in zip(report["rollout_actor_prob_diff_max"],
                                                          report["rollout_actor_prob_diff_mean"], strict=True)))
    print(f"  weights SFT -> RL: max |change| {report['max_weight_change_sft_to_rl']:.3g}")
    print("  held-out resolved: " + ", ".join(f"{name} {h['resolved']}/{h['tasks']} (sandbox errors {h['sandbox_errors']})"
                                             for name, h in report["heldout"].items()))
    total = sum(report["stage_seconds"].values())
    print("  wall time (s): " + ", ".join(f"{k} {v}" for k, v in report["stage_seconds"].items()) + f"; total {total}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: smoke_agent_report.py RUN_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
