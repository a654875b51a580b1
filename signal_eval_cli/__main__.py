"""``python -m signal_eval_cli``: the command line, as the console script runs it (also
``python -m signal_eval_cli.cli``)."""

from signal_eval_cli.cli import main_and_exit

main_and_exit()
