"""``mrlm-train quickstart``: SFT then GRPO (or PPO) on easy arithmetic with a tiny model, or, with
``--multi-agent``, two tiny agents solving a team task with SFT then MAGRPO; a table of what each stage adds."""

from __future__ import annotations

from mrlm.train.quickstart import QuickstartConfig


def run_quickstart_command(config: QuickstartConfig) -> int:
    """Run the quickstart (it prints its own report), return 0."""
    if config.multi_agent:
        from mrlm.train.quickstart_team import run_team_quickstart

        run_team_quickstart(config)
        return 0
    from mrlm.train.quickstart import run_quickstart

    run_quickstart(config)
    return 0
