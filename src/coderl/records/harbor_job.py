"""A run's episode records as one Harbor JOB directory (harbor 0.26.0's on-disk layout: its
``TrialPaths``, ``TrialResult``, ``JobResult`` and ``JobConfig``), so Harbor's own tools (``harbor
view``, its result models, anything that walks ``jobs/<job>/<trial>/``) open a coderl run as if
Harbor had run it. One trial per record; its trajectory is the record's ATIF (`coderl.records.atif`).

What we can say honestly, and what we cannot:

- reward: Harbor's verifier result (``{"reward": r}``, also ``verifier/reward.json``) only for a
  record the judge or grader SCORED. A record whose sandbox or grader failed on our side
  (``sandbox_error``) has no verifier result and a trial exception (``SandboxError``) whose error
  policy says the reward is not valid, so Harbor counts it an errored trial, never a 0; a record with
  no reward (scored outside coderl) has neither.
- times: a record holds the times its messages reached the gateway (agent records), not when the
  episode started or ended: ``agent_execution`` and ``started_at`` come from the messages;
  ``finished_at`` is the step file's modification time (records are appended as each sample is
  scored, so it is the trial's end or a later sample's of the same step); no setup or verifier times.
- not ours to fill: ``task_checksum`` (no Harbor task directory: empty, as Harbor's own viewer does
  for a trial without a result), cost, cache tokens, pass@k, tracebacks (the record keeps the
  message only). The task is the record's GRPO group (``<data_source>/<split>/<index>``) as a local
  task path that is a name, not a directory; the environment names coderl's sandbox by import path.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coderl import __version__

ENVIRONMENT = {"import_path": "coderl.sandbox"}  # a label: Harbor cannot start it (no trial is re-runnable)
EXCEPTION_TYPE = "SandboxError"  # coderl.errors' class for a failure on our side
# an infrastructure failure: retry it, do not grade it, its reward is not a reward (Harbor's policy fields)
NOT_A_REWARD = {"should_retry": True, "should_grade": False, "has_valid_reward": False}
RECORD_FACTS = ("kind", "group", "split", "step", "index", "verdict", "grade_status", "sandbox_error", "tool_calls",
                "tests_passed", "tests_total", "harness", "hack")


@dataclass
class HarborTrial:
    """One trial directory's files: ``result.json``, ``config.json`` and the others by relative path."""

    name: str
    result: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)


def trial_name(split: str, step: str, n: int) -> str:
    """``<split>_<step>_<n>``: the record's place, as the default layout's ``<split>/<step>/<n>.json``."""
    return f"{split}_{step}_{n}"


def job_id(job_dir: Path) -> uuid.UUID:
    """Stable per job directory, so a second export of the same run gives the same ids."""
    return uuid.uuid5(uuid.NAMESPACE_URL, job_dir.resolve().as_uri())


def harbor_trial(record: dict[str, Any], trajectory: dict[str, Any], name: str, job_dir: Path,
                 finished_at: float) -> HarborTrial:
    """The trial of one record whose ATIF ``trajectory`` is made; ``finished_at``: its step file's time."""
    job = job_id(job_dir)
    agent = trajectory["agent"]
    config = trial_config(record, agent, name, job_dir, job)
    times = sorted((s["timestamp"] for s in trajectory["steps"] if s.get("timestamp")), key=_when)
    ended = _iso(finished_at)
    failed = bool(record.get("sandbox_error"))
    reward = record.get("reward")
    scored = not failed and isinstance(reward, int | float) and not isinstance(reward, bool)
    result: dict[str, Any] = {
        "id": str(uuid.uuid5(job, name)), "task_name": _task(record), "trial_name": name,
        "trial_uri": (job_dir / name).resolve().as_uri(), "task_id": {"path": _task(record)},
        "source": record.get("data_source") or None, "task_checksum": "", "config": config,
        "agent_info": {"name": agent["name"], "version": agent["version"],
                       "model_info": {"name": agent["model_name"]} if agent.get("model_name") else None},
        "agent_result": _agent_result(record, trajectory),
        "verifier_result": {"rewards": {"reward": float(reward)}} if scored else None,
        "exception_info": None, "started_at": times[0] if times else None, "finished_at": ended,
        "agent_execution": {"started_at": times[0], "finished_at": times[-1]} if times else None,
    }
    files = {"config.json": config, "agent/trajectory.json": trajectory}
    if scored:
        files["verifier/reward.json"] = result["verifier_result"]["rewards"]
    log = _verifier_log(record)
    if log:
        files["verifier/test-stdout.txt"] = log
    if failed:
        message = _failure(record)
        result["exception_info"] = {"exception_type": EXCEPTION_TYPE, "exception_message": message,
                                    "exception_traceback": "", "occurred_at": ended,
                                    "policy_override": NOT_A_REWARD}
        files["exception.txt"] = message + "\n"
    return HarborTrial(name, result, files)


def trial_config(record: dict[str, Any], agent: dict[str, Any], name: str, job_dir: Path,
                 job: uuid.UUID) -> dict[str, Any]:
    return {"task": {"path": _task(record), "source": record.get("data_source") or None}, "trial_name": name,
            "trials_dir": str(job_dir), "agent": _agent_config(agent), "environment": ENVIRONMENT,
            "job_id": str(job)}


class HarborJob:
    """The job's ``config.json`` and ``result.json``, tallied trial by trial as they are written (a
    run's trials, token ids and all, are never held at once). The result leaves out
    ``trial_results``, as Harbor writes it; its ``stats`` are Harbor's ``JobStats``: per agent, model
    and dataset the scored trials' rewards and mean, the errored trials by exception type, token totals."""

    def __init__(self, job_dir: Path) -> None:
        self.job_dir = job_dir
        self.agents: dict[str, dict[str, Any]] = {}
        self.evals: dict[str, dict[str, Any]] = {}
        self.rewards: dict[str, list[float]] = {}
        self.times: list[str] = []
        self.ended: list[str] = []
        self.tokens: dict[str, int | None] = {"n_input_tokens": None, "n_output_tokens": None}
        self.trials = self.errored = 0

    def add(self, trial: HarborTrial) -> None:
        r = trial.result
        self.trials += 1
        self.agents[r["config"]["agent"]["name"]] = r["config"]["agent"]
        self.times += [r[k] for k in ("started_at", "finished_at") if r[k]]
        self.ended.append(r["finished_at"])
        model = (r["agent_info"]["model_info"] or {}).get("name")
        key = "__".join(p for p in (r["agent_info"]["name"], model, r["source"] or "adhoc") if p)
        stats = self.evals.setdefault(key, {"n_trials": 0, "n_errors": 0, "metrics": [], "reward_stats": {},
                                            "exception_stats": {}})
        if r["verifier_result"]:
            reward = r["verifier_result"]["rewards"]["reward"]
            stats["n_trials"] += 1
            stats["reward_stats"].setdefault("reward", {}).setdefault(reward, []).append(trial.name)
            rewards = self.rewards.setdefault(key, [])
            rewards.append(reward)
            stats["metrics"] = [{"mean": sum(rewards) / len(rewards)}]
        if r["exception_info"]:
            self.errored += 1
            stats["n_errors"] += 1
            stats["exception_stats"].setdefault(r["exception_info"]["exception_type"], []).append(trial.name)
        for k, total in self.tokens.items():
            count = (r["agent_result"] or {}).get(k)
            if count is not None:
                self.tokens[k] = (total or 0) + count

    def files(self) -> dict[str, dict[str, Any]]:
        config = {"job_name": self.job_dir.name, "jobs_dir": str(self.job_dir.parent), "n_attempts": 1,
                  "agents": list(self.agents.values()), "environment": ENVIRONMENT}
        ended = max(self.ended, key=_when)
        stats = {"n_completed_trials": self.trials, "n_errored_trials": self.errored, "n_running_trials": 0,
                 "n_pending_trials": 0, "n_cancelled_trials": 0, "n_retries": 0, "evals": self.evals, **self.tokens}
        result = {"id": str(job_id(self.job_dir)), "started_at": min(self.times, key=_when), "updated_at": ended,
                  "finished_at": ended, "n_total_trials": self.trials, "stats": stats}
        return {"config.json": config, "result.json": result}


def _agent_config(agent: dict[str, Any]) -> dict[str, Any]:
    """The model is the policy's path, not a provider's model name: Harbor must not parse it."""
    return {"name": agent["name"], "model_name": agent.get("model_name"), "skip_model_parsing": True}


def _agent_result(record: dict[str, Any], trajectory: dict[str, Any]) -> dict[str, Any]:
    """Token counts (every agent step's prompt and sampled tokens), the sampled turns as Harbor's
    rollout details (token ids and logprobs per turn: what RL consumers of a Harbor job read) and the
    record's own facts under ``metadata``."""
    totals = trajectory.get("final_metrics") or {}
    out: dict[str, Any] = {"n_input_tokens": totals.get("total_prompt_tokens"),
                           "n_output_tokens": totals.get("total_completion_tokens"),
                           "metadata": {"coderl": {k: record[k] for k in RECORD_FACTS if k in record},
                                        "exporter": f"coderl {__version__}"}}
    metrics = [s.get("metrics") or {} for s in trajectory["steps"] if s["source"] == "agent"]
    detail = {key: [m[key] for m in metrics] for key in ("prompt_token_ids", "completion_token_ids", "logprobs")
              if metrics and all(m.get(key) is not None for m in metrics)}
    if "completion_token_ids" in detail:
        out["rollout_details"] = [detail]
    return out


def _verifier_log(record: dict[str, Any]) -> str:
    """What the grader or judge said, as text: the grader's status, message and log tail, or the
    judge's verdict and one line per test."""
    grader = record.get("grader")
    if isinstance(grader, dict):
        return f"{grader.get('status')}: {grader.get('message') or ''}\n{grader.get('log') or ''}".rstrip() + "\n"
    judge = record.get("judge")
    if not isinstance(judge, dict):
        return ""
    lines = [f"verdict: {judge.get('verdict')}"]
    lines += [f"{k}: {judge[k]}" for k in ("compile_message", "error") if judge.get(k)]
    for k, test in enumerate(judge.get("tests") or [], 1):
        lines.append(f"test {k}: {test.get('verdict')} (run {test.get('status')}, {test.get('wall_s')} s) "
                     f"{test.get('message') or ''}".rstrip())
    return "\n".join(lines) + "\n"


def _failure(record: dict[str, Any]) -> str:
    """The record's own words for the failure on our side."""
    harness = record.get("harness") or {}
    grader = record.get("grader") or {}
    said = [str(x) for x in (harness.get("error"), grader.get("message"), record.get("error"),
                             (record.get("judge") or {}).get("error")) if x]
    return "sandbox_error: " + (said[0] if said else "the sandbox or grader failed (the record holds no message)")


def _task(record: dict[str, Any]) -> str:
    return str(record.get("group") or "?")


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat()


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)
