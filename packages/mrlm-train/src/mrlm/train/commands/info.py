"""``mrlm-train info``: print versions, devices, environments and algorithms."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class InfoArgs:
    """Show package versions, devices, registered environments and available algorithms."""

    json: bool = False
    """Print machine-readable JSON instead of text."""


def run_info(args: InfoArgs) -> int:
    """Print the installation description; always succeeds."""
    # Imported on use so that `mrlm-train --help` does not pay for torch.
    from mrlm.train.info import collect_info, format_info

    info = collect_info()
    print(json.dumps(info, indent=2) if args.json else format_info(info))
    return 0
