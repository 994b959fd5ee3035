"""Run by the harbor venv's Python 3.12 (tests/helpers/harbor_venv.py), never by coderl's: a jobs
folder written by `coderl export atif --layout harbor`, read by harbor's own code the way a Harbor
user's tools read it: `harbor view`'s folder detection and its viewer app (the FastAPI app `harbor
view` serves, called in-process: jobs, job, trials, tasks, trial, trajectory, verifier output), its
`JobScanner`, its `JobConfig`/`JobResult`/`TrialConfig`/`TrialResult` models, its `JobStats` and
its job runner's default metric (`Mean`) recomputed from the trial results (to compare with the job's
result.json), its verifier's reward-file parser and
its ATIF validator on each trial's trajectory. Prints one JSON object."""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

from fastapi.testclient import TestClient
from harbor.cli.view import _detect_folder_type
from harbor.job import Job
from harbor.metrics.mean import Mean
from harbor.models.job.result import JobStats
from harbor.models.trial.paths import TrialPaths
from harbor.utils.trajectory_validator import TrajectoryValidator
from harbor.verifier.verifier import Verifier
from harbor.viewer.scanner import JobScanner
from harbor.viewer.server import create_app


def main(jobs_dir: Path) -> dict:
    scanner = JobScanner(jobs_dir)
    (job,) = scanner.list_jobs()
    config, result = scanner.get_job_config(job), scanner.get_job_result(job)
    trials = {name: scanner.get_trial_result(job, name) for name in scanner.list_trials(job)}
    recomputed = JobStats.from_trial_results(list(trials.values()))
    for key, stats in recomputed.evals.items():  # what Harbor's job runner adds: its default metric
        rewards = [t.verifier_result.rewards for t in trials.values()
                   if Job._evals_key_for_result(t)[0] == key and t.reward_valid and t.verifier_result]
        stats.metrics = [Mean().compute(rewards)] if rewards else []
    out: dict = {"harbor": version("harbor"), "folder_type": _detect_folder_type(jobs_dir), "job": job,
                 "config_agents": [a.name for a in config.agents], "n_total_trials": result.n_total_trials,
                 "stats": result.stats.model_dump(mode="json"), "recomputed": recomputed.model_dump(mode="json"),
                 "trials": {}}
    with TestClient(create_app(jobs_dir)) as api:
        out["api_jobs"] = [j["name"] for j in get(api, "/api/jobs")["items"]]
        out["api_job_trials"] = get(api, f"/api/jobs/{job}")["n_total_trials"]
        listed = get(api, f"/api/jobs/{job}/trials")["items"]
        out["api_trials"] = {t["name"]: {"reward": t["reward"], "error_type": t["error_type"],
                                         "task_name": t["task_name"], "agent_name": t["agent_name"]} for t in listed}
        out["api_tasks"] = {t["task_name"]: {"n_trials": t["n_trials"], "n_errors": t["n_errors"],
                                             "avg_reward": t["avg_reward"]}
                            for t in get(api, f"/api/jobs/{job}/tasks")["items"]}
        for name, trial in trials.items():
            paths = TrialPaths(jobs_dir / job / name)
            validator = TrajectoryValidator()
            detail = get(api, f"/api/jobs/{job}/trials/{name}")
            trajectory = get(api, f"/api/jobs/{job}/trials/{name}/trajectory")
            verifier = get(api, f"/api/jobs/{job}/trials/{name}/verifier-output")
            out["trials"][name] = {
                "reward_valid": trial.reward_valid, "api_reward_valid": detail["reward_valid"],
                "rewards": trial.verifier_result.rewards if trial.verifier_result else None,
                "reward_file": (Verifier._parse_reward_json(SimpleNamespace(trial_paths=paths))
                                if paths.reward_json_path.exists() else None),
                "exception": [e.exception_type for e in trial.recorded_exceptions()],
                "policy": [vars(e.policy) for e in trial.recorded_exceptions()],
                "exception_txt": paths.exception_message_path.read_text() if paths.exception_message_path.exists()
                else None,
                "config_read": scanner.get_trial_config(job, name) is not None,
                "task_name": trial.task_name, "source": trial.source, "trial_name": trial.trial_name,
                "agent": trial.agent_info.name, "model": trial.agent_info.model_info.name
                if trial.agent_info.model_info else None,
                "started_at": str(trial.started_at) if trial.started_at else None, "finished": bool(trial.finished_at),
                "tokens": list(trial.compute_token_cost_totals()[:3]),
                "rollout_turns": [len(t) for d in (trial.agent_result.rollout_details or [])
                                  for t in d["completion_token_ids"]] if trial.agent_result else [],
                "trajectory_steps": len(trajectory["steps"]) if trajectory else None,
                "trajectory_valid": validator.validate(paths.agent_dir / "trajectory.json"),
                "trajectory_errors": validator.errors,
                "verifier_stdout": verifier["stdout"], "verifier_reward": verifier["reward"]}
    return out


def get(api: TestClient, path: str) -> dict:
    response = api.get(path)
    assert response.status_code == 200, (path, response.status_code, response.text[:500])
    return response.json()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
