"""The smoke run's report, from the run's own files: RUN/report.json and a short table on stdout.

    python scripts/smoke_report.py RUN_DIR

Reads verl's metrics.jsonl (file logger), the reward's per-sample log (reward_samples/<step>.jsonl),
the sandbox's Prometheus counters snapshotted right after RL, the eval's results.csv and samples,
the stage timings, and compares the SFT model's weights with the RL checkpoint's.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from statistics import mean
from typing import Any


def rl_metrics(run: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (run / "rl" / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return [{"step": r["step"], **r["data"]} for r in rows if "actor/grad_norm" in r.get("data", {})]


def reward_samples(run: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted((run / "rl" / "reward_samples").glob("[0-9]*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def sandbox_errors_per_step(samples: list[dict[str, Any]]) -> dict[str, list[int]]:
    """step -> [samples the reward flagged sandbox_error, samples], from its per-sample log."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in samples:
        out[str(s["step"])][0] += int(s["sandbox_error"])
        out[str(s["step"])][1] += 1
    return dict(sorted(out.items()))


def groups_with_variance(samples: list[dict[str, Any]]) -> tuple[int, int]:
    groups: dict[tuple[Any, str], set[float]] = defaultdict(set)
    for s in samples:  # a sandbox error's score is none of the group's (coderl.verl.scored_grpo)
        if not s["sandbox_error"]:
            groups[(s["step"], s["input"])].add(float(s["score"]))
    return sum(len(scores) > 1 for scores in groups.values()), len(groups)


def sandbox_runs(run: Path) -> dict[str, float]:
    """coderl_requests_total by route, as scraped from the sandbox right after the RL stage."""
    text = (run / "logs" / "sandbox_metrics_after_rl.txt").read_text()
    out: dict[str, float] = defaultdict(float)
    for m in re.finditer(r'^coderl_requests_total\{([^}]*)\}\s+([0-9.e+]+)$', text, re.M):
        route = re.search(r'route="([^"]*)"', m.group(1))
        out[route.group(1) if route else "?"] += float(m.group(2))
    return dict(out)


def scored_grpo(rl: Path) -> dict[str, Any]:
    """What verl computed for the sandbox-error samples, from the run's GRPO records (RL/grpo/grpo.jsonl:
    the sampler's line per trajectory, the estimator's line per row it saw, coderl.verl.scored_grpo):
    per step [flagged, samples]; and every way a flagged sample could still train, each of which must
    come out empty or zero: a flagged sample's group holding fewer untrained rows than it has flagged
    samples (the mask verl read back was not zero), an untrained row or a group below two scored
    samples with a non-zero advantage."""
    path = rl / "grpo" / "grpo.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
    samples = [r for r in lines if r["record"] == "sample"]
    rows = [r for r in lines if r["record"] == "advantage"]
    flagged = Counter((r["step"], r["uid"]) for r in samples if r["sandbox_error"])
    untrained = Counter((r["step"], r["uid"]) for r in rows if r["trained_tokens"] == 0)
    per_step: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for r in samples:
        per_step[r["step"]][0] += r["sandbox_error"]
        per_step[r["step"]][1] += 1
    return {
        "flagged_per_step": {str(k): v for k, v in sorted(per_step.items())},
        "advantage_rows": len(rows),
        "flagged_groups_with_a_trained_row": sorted(f"{k[0]}/{k[1]}" for k, n in flagged.items() if untrained[k] < n),
        "untrained_rows_with_advantage": sum(r["trained_tokens"] == 0 and r["advantage_abs_max"] != 0 for r in rows),
        "groups_below_two_scored": len({(r["step"], r["uid"]) for r in rows if r["group_scored"] < 2}),
        "groups_below_two_with_advantage": sum(r["group_scored"] < 2 and r["advantage_abs_max"] != 0 for r in rows),
    }


def fault_summary(log: Path) -> dict[str, int] | None:
    """The fault proxy's requests (scripts/smoke_fault_proxy.py's log): None when the switch was off."""
    if not log.is_file():
        return None
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return {"requests": len(lines), "faulted_requests": sum(r["faulted"] for r in lines),
            "items": sum(r["items"] for r in lines), "faulted_items": sum(r["items"] for r in lines if r["faulted"])}


def eval_tool_calls(run: Path) -> dict[int, float]:
    """Tool calls per eval sample, by step (the eval runs multi-turn with the tool, as training does)."""
    out = {}
    for path in (run / "eval").glob("step_*/samples.jsonl"):
        calls = [json.loads(line).get("tool_calls", 0) for line in path.read_text().splitlines() if line.strip()]
        out[int(path.parent.name.removeprefix("step_"))] = mean(calls) if calls else 0.0
    return dict(sorted(out.items()))


def weight_change(before: Path, after: Path) -> float:
    """The largest absolute difference over all parameters of two Hugging Face model dirs."""
    from safetensors.torch import load_file

    def load(d: Path) -> dict[str, Any]:
        tensors: dict[str, Any] = {}
        for f in sorted(d.glob("*.safetensors")):
            tensors.update(load_file(str(f)))
        return tensors

    a, b = load(before), load(after)
    if a.keys() != b.keys():
        raise SystemExit(f"error: {before} and {after} hold different parameters")
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def main(run: Path) -> int:
    stages = dict(line.split("\t") for line in (run / "stages.tsv").read_text().splitlines() if line)
    metrics = rl_metrics(run)
    samples = reward_samples(run)
    varied, groups = groups_with_variance(samples)
    with open(run / "eval" / "results.csv") as f:
        evals = {int(r["step"]): float(r["pass@1"]) for r in csv.DictReader(f)}
    rl_ckpt = sorted((run / "rl" / "checkpoints").glob("global_step_*"), key=lambda p: int(p.name.split("_")[-1]))[-1]
    report = {
        "rl_steps": [m["step"] for m in metrics],
        "grad_norm": [m["actor/grad_norm"] for m in metrics],
        "score_mean": [m.get("critic/score/mean") for m in metrics],
        # the sandbox-error samples: verl's step metric, the reward's own per-sample flags, the fault
        # switch's requests (SMOKE_FAULT_RATE), what the trainer computed for them
        "sandbox_error_rate": [m.get("coderl/sandbox_error_rate") for m in metrics],
        "sandbox_errors_per_step": sandbox_errors_per_step(samples),
        "fault": fault_summary(run / "logs" / "fault_proxy.jsonl"),
        "scored_grpo": scored_grpo(run / "rl"),
        "samples": len(samples),
        "tool_calls_per_sample": mean(s["tool_calls"] for s in samples) if samples else 0.0,
        "samples_with_tool_call": mean(float(s["tool_calls"] > 0) for s in samples) if samples else 0.0,
        "verdicts": {k: v / len(samples) for k, v in Counter(s["verdict"] for s in samples).most_common()},
        "distinct_scores": sorted({float(s["score"]) for s in samples}),
        "groups_with_reward_variance": [varied, groups],
        "sandbox_requests_during_rl": sandbox_runs(run),
        "rl_checkpoint": str(rl_ckpt),
        "max_weight_change_sft_to_rl": weight_change(run / "sft" / "merged", rl_ckpt / "huggingface_merged"),
        "pass_at_1": evals,
        "eval_tool_calls_per_sample": eval_tool_calls(run),
        "figures": sorted(str(p) for p in (run / "figures").glob("*.png")),
        "stage_seconds": {k: int(v) for k, v in stages.items()},
    }
    (run / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"smoke run: {run}")
    print(f"  RL steps            {report['rl_steps']}  grad_norm {[round(g, 4) for g in report['grad_norm']]}")
    print(f"  samples             {len(samples)}, tool calls per sample {report['tool_calls_per_sample']:.2f} "
          f"({report['samples_with_tool_call']:.0%} with a call)")
    print("  verdicts            " + ", ".join(f"{k} {v:.0%}" for k, v in report["verdicts"].items()))
    print(f"  reward variance     {varied}/{groups} GRPO groups; scores seen {report['distinct_scores']}")
    print(f"  sandbox errors      {report['sandbox_errors_per_step']} (flagged, samples) per step; "
          f"metric {report['sandbox_error_rate']}; fault switch {report['fault']}")
    print(f"  sandbox during RL   {report['sandbox_requests_during_rl']}")
    print(f"  weights SFT -> RL   max |change| {report['max_weight_change_sft_to_rl']:.3g}")
    print("  pass@1 (%)          " + ", ".join(f"step {k}: {v:.1f}" for k, v in sorted(evals.items())))
    print("  eval tool calls     " + ", ".join(f"step {k}: {v:.2f} per sample"
                                           for k, v in report["eval_tool_calls_per_sample"].items()))
    total = sum(report["stage_seconds"].values())
    print("  wall time (s)       " + ", ".join(f"{k} {v}" for k, v in report["stage_seconds"].items()) + f"; total {total}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: smoke_report.py RUN_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
