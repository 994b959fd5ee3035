"""`coderl export atif RUN_DIR [--out DIR]`: each episode record of a run (agent and code records, as
`coderl view` reads them) as one Harbor trajectory file (`coderl.records.atif`), laid out
``DIR/<split>/<step>/<n>.json`` (n: the record's place in its step file's order, from 0)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


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
    atif.add_argument("--out", metavar="DIR", help="where to write the files (default RUN_DIR/atif)")
    atif.set_defaults(func=run_atif)


def run_atif(args: argparse.Namespace) -> int:
    from coderl.records.atif import SCHEMA_VERSION, atif_trajectory
    from coderl.view.reader import read_run, run_directory

    run_dir = run_directory(args.run_dir, "coderl export")
    out = Path(args.out) if args.out else run_dir / "atif"
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out is not a directory: {out}")
    records = read_run(run_dir)
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
        path = out.joinpath(*place, f"{n}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(trajectory, ensure_ascii=False), encoding="utf-8")
        written += 1
    unread = len(records.skipped)
    if not written:
        why = refused[0] if refused else (records.skipped[0]["reason"] if records.skipped else "no records")
        raise ValueError(f"no episode exported from {run_dir}: {why}")
    print(f"{out}: {written} trajectories ({SCHEMA_VERSION}), {len(refused)} records not exported, "
          f"{unread} unreadable lines or files skipped")
    return 0
