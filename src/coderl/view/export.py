"""`coderl export atif RUN_DIR [--out DIR] [--layout trajectories|harbor]`: each episode record of a
run (agent and code records, as `coderl view` reads them) as one Harbor trajectory (`coderl.records.atif`):
``trajectories`` (default) lays them out ``DIR/<split>/<step>/<n>.json`` (n: the record's place in
its step file's order, from 0); ``harbor`` writes a Harbor job, ``DIR/<run>/<split>_<step>_<n>/``,
one trial per record with its result, reward and trajectory where Harbor keeps them
(`coderl.records.harbor_job`), so ``harbor view DIR`` opens the run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

LAYOUTS = ("trajectories", "harbor")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("export", help="a run's episode records in another tool's format (ATIF: Harbor's)",
                              description="Write a run's per-sample records in a format other tools read. "
                                          "Our own format is the records themselves (RUN_DIR/records).")
    formats = p.add_subparsers(dest="format", metavar="FORMAT")
    formats.required = True
    atif = formats.add_parser("atif", help="one ATIF trajectory JSON per episode (Harbor's trajectory format)",
                              description="One ATIF trajectory (Harbor's Agent Trajectory Interchange Format) per "
                                          "episode record: steps, tool calls and their observations, token ids and "
                                          "logprobs per agent turn; reward, verdict and grader result under extra.")
    atif.add_argument("run_dir", metavar="RUN_DIR", help="the run's output directory (records/ in it or one level down)")
    atif.add_argument("--out", metavar="DIR", help="where to write the files (default RUN_DIR/atif, "
                                                   "RUN_DIR/harbor with --layout harbor)")
    atif.add_argument("--layout", choices=LAYOUTS, default="trajectories",
                      help="trajectories: DIR/<split>/<step>/<n>.json; harbor: a Harbor job directory "
                           "DIR/<run>/<trial>/ (agent/trajectory.json, result.json, verifier/reward.json) "
                           "that `harbor view DIR` opens")
    atif.set_defaults(func=run_atif)


def run_atif(args: argparse.Namespace) -> int:
    from coderl.records.atif import SCHEMA_VERSION, atif_trajectory
    from coderl.view.reader import read_run, run_directory

    run_dir = run_directory(args.run_dir, "coderl export")
    out = Path(args.out) if args.out else run_dir / ("harbor" if args.layout == "harbor" else "atif")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out is not a directory: {out}")
    records = read_run(run_dir)
    job = _HarborJobWriter(run_dir, records.sources, out) if args.layout == "harbor" else None
    written, refused = 0, []
    places: dict[tuple[str, str], int] = {}
    for record in records.samples:
        place = (str(record["split"]), "nostep" if record["step"] is None else str(record["step"]))
        n = places[place] = places.get(place, -1) + 1
        try:
            trajectory = atif_trajectory(record)
        except ValueError as exc:
            refused.append(f"{place[0]}/{place[1]}/{n}: {exc}")
            continue
        if job is not None:
            job.add(record, place, n, trajectory)
        else:
            _write(out.joinpath(*place, f"{n}.json"), trajectory)
        written += 1
    unread = len(records.skipped)
    if not written:
        why = refused[0] if refused else (records.skipped[0]["reason"] if records.skipped else "no records")
        raise ValueError(f"no episode exported from {run_dir}: {why}")
    where, what = (job.finish(), "trials (one Harbor job, ") if job is not None else (out, "trajectories (")
    print(f"{where}: {written} {what}{SCHEMA_VERSION}), {len(refused)} records not exported, "
          f"{unread} unreadable lines or files skipped")
    return 0


class _HarborJobWriter:
    """One trial directory per record as it comes, then the job's config and result, under
    ``out/<run's name>`` (`coderl.records.harbor_job`)."""

    def __init__(self, run_dir: Path, sources: list[str], out: Path) -> None:
        from coderl.records.harbor_job import HarborJob

        self.job = HarborJob(out / run_dir.resolve().name)
        self.times = _step_file_times(run_dir, sources)

    def add(self, record: dict, place: tuple[str, str], n: int, trajectory: dict) -> None:
        from coderl.records.harbor_job import harbor_trial, trial_name

        when = self.times.get(place) or max(self.times.values())
        trial = harbor_trial(record, trajectory, trial_name(*place, n), self.job.job_dir, when)
        for name, content in {"result.json": trial.result, **trial.files}.items():
            _write(self.job.job_dir / trial.name / name, content)
        self.job.add(trial)

    def finish(self) -> Path:
        for name, content in self.job.files().items():
            _write(self.job.job_dir / name, content)
        return self.job.job_dir


def _step_file_times(run_dir: Path, sources: list[str]) -> dict[tuple[str, str], float]:
    """When each (split, step) file of the records was last written: records hold no time of their
    own (see `coderl.records.harbor_job`); the latest where several record folders have the step."""
    times: dict[tuple[str, str], float] = {}
    for source in sources:
        folder = run_dir / source
        for path in [*folder.glob("*.jsonl"), *folder.glob("*/*.jsonl")]:
            place = ("train" if path.parent == folder else path.parent.name, path.stem)
            times[place] = max(times.get(place, 0.0), path.stat().st_mtime)
    return times


def _write(path: Path, content: dict | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
