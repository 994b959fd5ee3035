"""`coderl view RUN_DIR [--out FILE]`: write the run's viewer page (see `coderl.view`)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("view", help="one self-contained HTML page of a run's per-sample records",
                              description="Write ONE HTML file (no network; open it from file://) showing a run's "
                                          "records: an overview by step, a filterable sample table, each sample's "
                                          "turns, tool runs, verdicts, tokens and diff. Unreadable files are listed "
                                          "on the page, not fatal.")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run's output directory (records/ in it or one level down)")
    p.add_argument("--out", metavar="FILE", help="the page to write (default RUN_DIR/view.html)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from coderl.view.page import write_view
    from coderl.view.reader import read_run, run_directory

    run_dir = run_directory(args.run_dir, "coderl view")
    out = Path(args.out) if args.out else run_dir / "view.html"
    if out.is_dir():
        raise IsADirectoryError(f"--out is a directory: {out} (give a file name)")
    records = read_run(run_dir)
    data_bytes = write_view(records, out)
    per_sample = round(data_bytes / len(records.samples)) if records.samples else 0
    print(f"{out}: {len(records.samples)} samples ({per_sample} bytes each), {len(records.skipped)} skipped")
    return 0
