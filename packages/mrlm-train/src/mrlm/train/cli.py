"""The ``mrlm-train`` command line: one tyro subcommand per entry of ``COMMANDS``."""

from __future__ import annotations

from typing import Annotated, Any, Union

import tyro

from mrlm.train.commands import COMMANDS

PROG = "mrlm-train"
DESCRIPTION = "Train LLM agents with reinforcement learning on MRLM environments."


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the chosen subcommand, return its status.

    ``--help`` and usage errors exit through ``SystemExit`` as argparse does (status 0 and 2).
    """
    # A Union of annotated dataclasses is tyro's subcommand form: it parses into an instance of
    # exactly one of them, which identifies the command to run.
    choices = tuple(Annotated[command.args, tyro.conf.subcommand(command.name)] for command in COMMANDS)
    # Built at run time from COMMANDS, so it is a value to tyro and opaque (Any) to type checkers.
    union: Any = Union[choices]  # noqa: UP007
    args: Any = tyro.cli(
        union,
        args=argv,
        prog=PROG,
        description=DESCRIPTION,
        # Boolean options are plain flags (`--json`), without a generated `--no-json` twin.
        config=(tyro.conf.FlagCreatePairsOff,),
    )
    for command in COMMANDS:
        if isinstance(args, command.args):
            return command.run(args)
    raise AssertionError(f"no command for parsed arguments {args!r}")
