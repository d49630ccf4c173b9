"""The ``hmrf`` command.

Each sub-command lives in :mod:`hmrf.commands` as a module exposing ``add_parser``
(register its arguments) and ``run(args) -> int``. Run ``hmrf <command> --help``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["main", "COMMANDS"]

#: sub-command name -> module in hmrf.commands
COMMANDS = {"fit": "fit", "compare": "compare", "curve": "curve", "active": "active"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hmrf",
        description="Semi-supervised clustering with Hidden Markov Random Fields.",
    )
    sub = parser.add_subparsers(dest="command", metavar="command")
    sub.required = True
    for module in COMMANDS.values():
        try:
            mod = importlib.import_module(f"hmrf.commands.{module}")
        except ModuleNotFoundError as exc:  # command still being written
            if exc.name != f"hmrf.commands.{module}":
                raise
            continue
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``hmrf`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except (ValueError, TypeError, FileNotFoundError, ImportError) as exc:
        print(f"hmrf {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
