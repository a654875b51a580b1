"""What every ``signal-eval`` command shares beyond its own options.

- ``--verbose`` (:data:`VerboseOpt`): full tracebacks (a harness that raised, a factory
  that failed to import) on stderr, through the ``signal_eval_cli`` logger; without it an
  error is one line that locates it in the user's code.
- Boolean options are plain flags: ``--quiet true`` is refused with a message saying so
  (click would take ``true`` for an argument, or a second dataset).
- A number option refuses NaN: click's range checks let it through (every comparison
  with NaN is false), and ``--significance nan`` would never find a regression.
- stdout writes what it cannot encode escaped (``\\ud83d``), as stderr does: a harness's
  output holding a lone surrogate (a model's stream cut inside an emoji) ended the run
  in a traceback at the table, before its reports were written.
"""

from __future__ import annotations

import itertools
import logging
import math
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

__all__ = ["LOG", "Command", "VerboseOpt"]

LOG = logging.getLogger("signal_eval_cli")
_BOOLEAN_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})


def _verbose(value: bool) -> None:
    if value and not any(getattr(h, "_signal_eval", False) for h in LOG.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._signal_eval = True  # type: ignore[attr-defined]
        LOG.addHandler(handler)
        LOG.setLevel(logging.DEBUG)


class Command(TyperCommand):
    """A Typer command whose flags refuse a value (``--quiet true``), whose number
    options refuse NaN, and whose output streams escape what they cannot encode."""

    def invoke(self, ctx: Any) -> Any:
        for stream in (sys.stdout, sys.stderr):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="backslashreplace")
        from signal_eval_cli.cli.common import EXIT_INTERRUPTED, err, stdout_for_files

        given = {max(p.opts, key=len): ctx.params.get(p.name) for p in self.params}
        try:
            with stdout_for_files(given):
                return super().invoke(ctx)
        except KeyboardInterrupt:  # before a run began (loading a dataset): nothing ran
            err.print("interrupted", style="yellow")  # Typer's own exit 130 says nothing
            raise typer.Exit(EXIT_INTERRUPTED) from None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        flags = {
            name
            for p in self.params
            if getattr(p, "is_flag", False)
            for name in (*p.opts, *getattr(p, "secondary_opts", ()))
        }
        for option, value in itertools.pairwise(args):
            if option == "--":
                break
            if option in flags and value.lower() in _BOOLEAN_WORDS:
                raise typer.BadParameter(
                    f"{option} is a flag and takes no value: write {option} alone, "
                    f"or leave it out (got {option} {value})",
                    ctx,
                )
        rest = super().parse_args(ctx, args)
        for param in self.params:
            value = ctx.params.get(param.name)
            if isinstance(value, float) and math.isnan(value):
                raise typer.BadParameter("nan is not a number", ctx, param)
        return rest


VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        callback=_verbose,
        is_eager=True,
        help="Print the full traceback of an error (a harness that raised, a failed import).",
    ),
]
