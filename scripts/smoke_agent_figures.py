"""The agent smoke run's figure, RUN/figures/agent_progress.png, from the run's own files: per RL step
the resolved rate and reward spread of the training episodes, assistant turns and response / trained
tokens per episode, grad_norm and verl's rollout-vs-actor probability difference; the held-out
resolved rate of the SFT model and of the RL checkpoint. (verl's own metrics get `coderl plot
training` beside it.)

    python scripts/smoke_agent_figures.py RUN_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from smoke_agent_report import episodes, rl_metrics, step_table

NOTE = "tiny-model CPU smoke run"


def main(run: Path) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_step = episodes(run)
    steps = sorted(by_step)
    tables = {s: step_table(by_step[s], stop_ids=set()) for s in steps}
    metrics = {m["step"]: m for m in rl_metrics(run)}
    heldout = {name: json.loads((run / "eval" / name / "summary.json").read_text()) for name in ("sft", "rl")}

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    ax = axes[0][0]
    ax.plot(steps, [tables[s]["resolved_rate"] or 0.0 for s in steps], "o-", label="resolved rate (train episodes)")
    for s in steps:
        rewards = [r or 0.0 for r in tables[s]["rewards"]]
        ax.scatter([s] * len(rewards), rewards, alpha=0.3, color="gray")
    ax.set(title="repository grader's reward per episode", xlabel="RL step", ylim=(-0.05, 1.05), xticks=steps)
    ax.legend(loc="upper left", fontsize=8)

    ax = axes[0][1]
    ax.plot(steps, [tables[s]["response_tokens_per_episode"] for s in steps], "o-", label="response tokens")
    ax.plot(steps, [tables[s]["trained_tokens_per_episode"] for s in steps], "s-", label="trained (mask 1)")
    twin = ax.twinx()
    twin.plot(steps, [tables[s]["turns_per_episode"] for s in steps], "^--", color="C2", label="assistant turns")
    twin.set_ylabel("turns per episode")
    ax.set(title="per episode (mean)", xlabel="RL step", ylabel="tokens", xticks=steps)
    ax.legend(loc="upper left", fontsize=8)
    twin.legend(loc="upper right", fontsize=8)

    ax = axes[1][0]
    ax.plot(steps, [metrics.get(s, {}).get("actor/grad_norm", float("nan")) for s in steps], "o-", label="grad_norm")
    ax.plot(steps, [metrics.get(s, {}).get("training/rollout_probs_diff_max", float("nan")) for s in steps], "s-",
            label="|p rollout - p actor| max (verl)")
    ax.set(title="training signal", xlabel="RL step", xticks=steps)
    ax.legend(loc="upper left", fontsize=8)

    ax = axes[1][1]
    names = ["SFT model", "RL checkpoint"]
    rates = [100 * (heldout[k]["resolved_rate"] or 0.0) for k in ("sft", "rl")]
    bars = ax.bar(names, rates, color=["C0", "C1"])
    for bar, k in zip(bars, ("sft", "rl"), strict=True):
        ax.annotate(f"{heldout[k]['resolved']}/{heldout[k]['tasks']}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom")
    ax.set(title="held-out tasks resolved (coderl eval swe --harness)", ylabel="%", ylim=(0, 105))

    fig.suptitle(f"Agentic RL through the gateway: stock mini-swe-agent in session sandboxes ({NOTE})")
    fig.tight_layout()
    out = run / "figures" / "agent_progress.png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: smoke_agent_figures.py RUN_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1])))
