"""A one-line console progress display: step, the key metrics, tokens per second and time left.

On a terminal the line is redrawn in place; otherwise (a log file, CI) each update is its own
line. Only the main process shows it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import TextIO

# Metrics worth a glance during RL training, in display order.
SHOWN: tuple[str, ...] = ("reward", "loss", "kl")


def format_duration(seconds: float) -> str:
    """``3h04m``, ``4m05s`` or ``7s``."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class Progress:
    """Tracks the pace of the run and renders it.

    ``unit`` names what is counted (``step 3/50``; an evaluation counts ``episodes 64/648``).
    """

    def __init__(
        self, total: int, *, start_step: int = 0, stream: TextIO | None = None, unit: str = "step"
    ) -> None:
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self._start_step = start_step
        self._start_time = time.monotonic()
        self._tokens = 0.0
        self._last_time = self._start_time
        self._last_width = 0

    def restart(self, step: int) -> None:
        """Measure the pace from ``step`` on (after resuming, earlier steps took no time here)."""
        self._start_step = step
        self._start_time = self._last_time = time.monotonic()
        self._tokens = 0.0

    def count_tokens(self, tokens: float) -> None:
        """Add tokens processed since the last display (for tokens per second)."""
        self._tokens += tokens

    def line(self, step: int, metrics: Mapping[str, float]) -> str:
        """The text of the display at ``step``; resets the tokens-per-second window."""
        now = time.monotonic()
        parts = [f"{self.unit} {step}/{self.total}"]
        parts += [f"{key} {metrics[key]:.4g}" for key in SHOWN if key in metrics]
        window = now - self._last_time
        if self._tokens and window > 0:
            parts.append(f"tok/s {self._tokens / window:,.0f}")
        done = step - self._start_step
        if done > 0:
            left = (now - self._start_time) / done * max(0, self.total - step)
            parts.append(f"left {format_duration(left)}")
        self._tokens = 0.0
        self._last_time = now
        return " | ".join(parts)

    def show(self, step: int, metrics: Mapping[str, float]) -> None:
        """Draw the display."""
        text = self.line(step, metrics)
        if self.stream.isatty():
            self.stream.write("\r" + text.ljust(self._last_width))
            self._last_width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the in-place line so later output starts on a fresh line."""
        if self._last_width and self.stream.isatty():
            self.stream.write("\n")
            self.stream.flush()
        self._last_width = 0
