"""What a run needs to save the last finished step after it has moved on: kept at each step's end.

A checkpoint is written every ``run.save_every`` steps. When a run stops on an error between two of
them (the env server went away, an env raised, Ctrl-C), the models and optimizers still hold the last
finished step exactly as long as no update of the next step has happened yet, but the random
generators and the algorithm's state (a sampler's cursor) have moved on with the failed step's
rollout. :class:`StepBoundary` keeps those two as they were when the step ended, so that the
checkpoint written at the failure is the one ``save_every=1`` would have written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mrlm.train.loop.errors import NonFiniteError, Terminated


@dataclass(frozen=True)
class StepBoundary:
    """The end of training step ``step``.

    Attributes:
        step: the training steps done.
        updates: the optimizer steps begun (a later one changes the models: nothing to save then).
        rng: every generator's state (:func:`~mrlm.train.loop.rng.capture_rng_state`).
        extra_state: the algorithm's state, its containers copied (tensors and other values are
            shared: algorithms hand over values they do not change afterwards).
    """

    step: int
    updates: int
    rng: dict[str, Any]
    extra_state: dict[str, Any] | None


def copied_containers(value: Any) -> Any:
    """``value`` with every dict, list and tuple in it copied, anything else shared."""
    if isinstance(value, dict):
        return {key: copied_containers(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(copied_containers(item) for item in value)
    return value


def saves_at_failure(error: BaseException) -> bool:
    """Whether a run stopped by ``error`` saves its last finished step: any error, Ctrl-C and
    SIGTERM (:class:`~mrlm.train.loop.errors.Terminated`), but not a non-finite loss or gradient
    (its message names the last checkpoint, and resuming from the step before would meet the same
    numbers) nor an exit asked for."""
    if isinstance(error, NonFiniteError):
        return False
    return isinstance(error, (Exception, KeyboardInterrupt, Terminated))
