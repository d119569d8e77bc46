"""``mrlm-train quickstart``: SFT then GRPO on easy arithmetic with a tiny model, with a table of what each adds."""

from __future__ import annotations

from mrlm.train.quickstart import QuickstartConfig


def run_quickstart_command(config: QuickstartConfig) -> int:
    """Run the quickstart (it prints its own report), return 0."""
    from mrlm.train.quickstart import run_quickstart

    run_quickstart(config)
    return 0
