"""Holding Ctrl-C and SIGTERM back while a checkpoint is written.

A signal that lands in the middle of a save interrupts torch's checkpoint writer, which reports it
as a failed save (a ``CheckpointException``, not the ``KeyboardInterrupt``), and the step being
saved is lost; a second Ctrl-C pressed to stop faster lands in the save the first one started.
:func:`signals_held` records SIGINT and SIGTERM instead, says once that the save goes on, and
delivers the first of them to the handler it replaced when the block ends: the run then stops as
it would have, with its checkpoint whole.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

HELD = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def signals_held(doing: str) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM are recorded, not handled; the first one recorded is
    delivered to the previous handler once the block has ended (and the handlers are back).
    ``doing`` ("writing the checkpoint of step 3") is printed on stderr at the first one.

    Only the main thread can set handlers: elsewhere the block runs with signals as they are.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        if not caught:
            print(
                f"{signal.Signals(signum).name} received while {doing}: stopping once it is done",
                file=sys.stderr,
            )
        caught.append(signum)

    previous = {signum: signal.signal(signum, hold) for signum in HELD}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if caught:
            signal.raise_signal(caught[0])  # handled now, by the handler that was in place
