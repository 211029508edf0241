"""One module per ``rankduel`` subcommand, each with ``add_parser(subparsers)``."""
