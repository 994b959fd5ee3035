"""`coderl plot training|eval`: the appliance's figures.

Each figure lands beside its input unless --out says otherwise, so trying the command on the
example inputs (tests/fixtures/eval: metrics.jsonl, rollouts/, results.csv) never overwrites the
tracked figures/*.png (which `CODERL_UPDATE_FIGURES=1 pytest tests/plots` redraws)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    plot = subparsers.add_parser("plot", help="draw training and evaluation figures")
    sub = plot.add_subparsers(dest="plot_command", metavar="FIGURE")
    sub.required = True
    t = sub.add_parser("training", help="training_progress.png from verl's file-logger metrics (+ rollout dumps)")
    t.add_argument("--metrics", required=True, help="the JSONL verl's `file` logger wrote (VERL_FILE_LOGGER_PATH)")
    t.add_argument("--rollouts", help="per-step sample logs <dir>/<step>.jsonl (verl's rollout_data_dir layout, with the reward's "
                        "verdict and tool_calls) for verdict shares and tool calls")
    t.add_argument("--out", help="the PNG to write (default: training_progress.png beside --metrics)")
    t.add_argument("--note", help="shown in the title, e.g. the run name")
    t.set_defaults(func=_training)
    e = sub.add_parser("eval", help="evaluation_progress.png from the results table")
    e.add_argument("--results", required=True, help="CSV with step,pass@1[,easy,medium,hard]")
    e.add_argument("--out", help="the PNG to write (default: evaluation_progress.png beside --results)")
    e.add_argument("--no-difficulty", action="store_true")
    e.add_argument("--with-recipe", action="store_true", help="overlay the recipe's reported pass@1")
    e.add_argument("--note", help="shown in the title, e.g. the run name")
    e.set_defaults(func=_eval)


def _training(args: argparse.Namespace) -> int:
    from coderl.plots.training import plot_training

    out = args.out or str(Path(args.metrics).parent / "training_progress.png")
    print(plot_training(args.metrics, out, args.rollouts, note=args.note))
    return 0


def _eval(args: argparse.Namespace) -> int:
    from coderl.plots.evaluation import RECIPE_REPORTED, plot_evaluation

    out = args.out or str(Path(args.results).parent / "evaluation_progress.png")
    print(plot_evaluation(args.results, out, by_difficulty=not args.no_difficulty,
                          reference=RECIPE_REPORTED if args.with_recipe else None, note=args.note))
    return 0
