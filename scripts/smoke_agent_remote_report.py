"""The remote-sessions GRPO step's report (scripts/smoke_agent_remote_step.sh), from the run's own files:
RUN/report.json and a line per figure on stdout.

    python scripts/smoke_agent_remote_report.py RUN_DIR MODEL_DIR

The step's episodes as the agent smoke run's report reads them (``smoke_agent_report.step_table``:
outcomes, turns, tokens, drifts, sandbox errors, every mask-1 token sampled), verl's metrics of the
step, and what the session service served (``RUN/service_metrics.txt``, its Prometheus counters, read
while it ran): sessions opened, commands run, diffs taken and graded. An episode whose sandbox had been local
would leave no trace there; its model turns reached the gateway through the service's relay, the
only way out of a sandbox with no network.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from smoke_agent_report import (  # the agent smoke run's readers
    episodes,
    metric_series,
    rl_metrics,
    stage_seconds,
    step_table,
    stop_ids,
)
from smoke_report import fault_summary, scored_grpo  # the code smoke run's readers of the same records

REQUEST = re.compile(r'^coderl_requests_total\{(?P<labels>.*)\} (?P<value>\S+)$')  # a route holds braces


def service_requests(metrics_text: str) -> dict[str, int]:
    """route -> requests, for the session and grading routes (status codes summed)."""
    out: Counter[str] = Counter()
    for line in metrics_text.splitlines():
        match = REQUEST.match(line)
        if not match:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
        if labels.get("route", "").startswith(("/v1/sessions", "/v1/swe/")):
            out[labels["route"]] += int(float(match["value"]))
    return dict(sorted(out.items()))


def main(run: Path, model: Path) -> int:
    stops = stop_ids(model)
    steps = {step: step_table(records, stops) for step, records in episodes(run).items()}
    report: dict[str, Any] = {
        **metric_series(rl_metrics(run)),
        "steps": steps,
        "service_requests": service_requests((run / "service_metrics.txt").read_text()),
        "fault": fault_summary(run / "logs" / "fault_proxy.jsonl"),  # SMOKE_FAULT_RATE's proxy, None when off
        "scored_grpo": scored_grpo(run / "rl"),
        "stage_seconds": stage_seconds(run),
    }
    (run / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    for step, s in steps.items():
        print(f"step {step}: {s['episodes']} episodes, outcomes {s['outcomes']}, sandbox errors {s['sandbox_errors']}, "
              f"turns/episode {s['turns_per_episode']:.1f}")
    print(f"grad_norm {report['grad_norm']}; service requests {report['service_requests']}")
    print(f"sandbox_error_rate {report['sandbox_error_rate']}; fault switch {report['fault']}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: smoke_agent_remote_report.py RUN_DIR MODEL_DIR")
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
