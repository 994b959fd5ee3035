"""The one `coderl` command. Each package contributes its subcommands through a `register`
function in its own `cli` module, so this file only dispatches and turns errors into one line."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from coderl import __version__
from coderl.errors import CoderlError

# Modules with `register(subparsers: argparse._SubParsersAction) -> None`. Keep them cheap to
# import: heavy imports belong inside the handlers.
COMMAND_MODULES: tuple[str, ...] = (
    "coderl.sandbox.cli",
    "coderl.judge.cli",
    "coderl.server.cli",
    "coderl.data.cli",
    "coderl.eval.cli",
    "coderl.plots.cli",
    "coderl.demo",
    "coderl.gateway.cli",
    "coderl.view.cli",
    "coderl.view.export",
    "coderl.server.ray_images",
)


DESCRIPTION = ("coderl: a secure batch code-execution sandbox, a judge and the verl integration for "
               "training code LLMs with RL. `coderl COMMAND --help` shows each command's options.")


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments get one line (what is wrong, where to look), not argparse's usage block.
    Subcommand parsers are made of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="coderl", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"coderl {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(subparsers)
    _name_parsers(parser)
    return parser


def _name_parsers(parser: argparse.ArgumentParser) -> None:
    """Each (sub)command records its own parser, so an option it does not know is reported by the
    subcommand that was given it (`see coderl eval lcb --help`), not by the top-level parser."""
    parser.set_defaults(parser_=parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _name_parsers(sub)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand; errors become one line on stderr and a non-zero exit code.

    Exit codes: 0 ok, 1 the work ran and failed (or an unexpected internal error), 2 bad input,
    3 sandbox/infrastructure error, 130 interrupted. ``CODERL_DEBUG=1`` shows tracebacks.
    """
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        args.parser_.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        result = args.func(args)
    except KeyboardInterrupt:
        print("coderl: interrupted", file=sys.stderr)
        return 130
    except CoderlError as exc:  # its class says the exit code (coderl.errors)
        _debug()
        print(f"coderl: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except (FileNotFoundError, PermissionError, IsADirectoryError, ValueError) as exc:
        _debug()
        print(f"coderl: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # last resort: one line, never a bare traceback
        _debug()
        print(f"coderl: internal error: {type(exc).__name__}: {exc} (set CODERL_DEBUG=1 for details)",
              file=sys.stderr)
        return 1
    return int(result or 0)


def _debug() -> None:
    if os.environ.get("CODERL_DEBUG"):
        import traceback

        traceback.print_exc()


if __name__ == "__main__":
    sys.exit(main())
