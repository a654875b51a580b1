"""The ``signal-eval`` console script: imports the command line under a Ctrl-C guard.

Importing the package takes a moment, and a Ctrl-C in it would print a traceback from
the middle of an import. Here it ends quietly with 130, as a Ctrl-C at any later moment
does (Typer turns those into exit 130). It lives outside ``signal_eval_cli`` because
importing anything inside runs the package's ``__init__`` first, unguarded.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Console-script entry point."""
    try:
        from signal_eval_cli.cli import main_and_exit
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)  # cli.common.EXIT_INTERRUPTED, not imported: it is heavy
    main_and_exit()
