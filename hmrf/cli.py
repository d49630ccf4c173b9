"""The ``hmrf`` command (also ``python -m hmrf``).

Each sub-command lives in ``hmrf.commands`` as a module with ``add_parser(sub)``
(its arguments) and ``run(args) -> int``. ``main`` returns the exit code: 0 on success,
2 for bad arguments, bad files or constraints that cannot be met (the message is one line
on stderr, after argparse's usage line for a malformed option, and no result file is
written); any other failure (a solver's ``RuntimeError``) ends with its traceback, exit
code 1. Inside a study, ``compare`` and ``curve`` record a fit that raises and go on (but
for an ``ImportError``), and ``active`` one that fails on its constraints.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "build_parser", "COMMANDS"]

#: sub-command names, in the order ``hmrf --help`` lists them (modules of hmrf.commands)
COMMANDS = ("fit", "compare", "curve", "active")

_DESCRIPTION = """\
Semi-supervised clustering with Hidden Markov Random Fields (Basu 2005).

Cluster your own points with your own must-link / cannot-link pairs:
  hmrf fit --data points.csv --pairs pairs.csv --k 3 --plot
Compare the E-step engines on Iris (thesis Fig. 4.13):
  hmrf compare --dataset iris --engines icm,bp,lp --runs 10"""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every sub-command (imports neither scikit-learn nor matplotlib).

    With ``only`` (a name of :data:`COMMANDS`, or ``""`` for none), only that
    sub-command gets its arguments and help; the others are listed by name and
    summary. That is all one run of :func:`main` needs, and ``hmrf --help`` then
    imports nothing that a command's help text draws on (the engine table, the data
    sets).
    """
    parser = argparse.ArgumentParser(
        prog="hmrf", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run 'hmrf <command> --help' for a command's options and their defaults.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show program's version number and exit")
    sub = parser.add_subparsers(dest="command", metavar="command", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"hmrf.commands.{name}")
        if only is None or only == name:
            module.add_parser(sub).set_defaults(_run=module.run)
        else:
            sub.add_parser(name, help=module.SUMMARY)
    return parser


class _Version(argparse.Action):
    """``--version``: the installed version, read only when asked for."""

    def __call__(self, parser, namespace, values, option_string=None):
        from . import __version__

        print(f"hmrf {__version__}")
        parser.exit()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (see the module docstring). The modules of
    ``--plugin`` are imported first, so that the names they register are known to the
    arguments and to ``--help``."""
    from .commands._common import import_plugins, plugin_names

    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        import_plugins(plugin_names(argv))
    except ImportError as exc:
        print(f"hmrf: error: {exc}", file=sys.stderr)
        return 2
    command = next((a for a in argv if not a.startswith("-")), "")
    parser = build_parser(command if command in COMMANDS else "")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args._run(args) or 0)
    except (ValueError, TypeError, OSError, ImportError) as exc:
        print(f"hmrf {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hmrf {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
