"""The ``rankduel`` command line.

Each subcommand lives in ``service/commands/<name>.py`` and exposes
``add_parser(subparsers)``, which registers its parser and sets ``func`` (called with the
parsed arguments, returning an exit code). Modules are imported only when present so a
subcommand's heavy imports stay out of the others.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: subcommand modules, in the order ``--help`` lists them
COMMANDS = ["simulate", "matrix", "serve", "worker", "demo", "traffic", "judge"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rankduel",
        description="Online interleaving experiments for search rankers, run by dueling bandits.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            path = "judging.cli" if name == "judge" else f"service.commands.{name}"
            module = importlib.import_module(path)
        except ModuleNotFoundError as exc:
            if exc.name == path:
                continue
            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except ValueError as exc:  # bad input reaches the user as one clear line
        print(f"rankduel {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
