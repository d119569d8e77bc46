"""Errors raised by the training loop, each carrying what a person needs to act on it."""

from __future__ import annotations


class NonFiniteError(FloatingPointError):
    """A loss, metric or gradient became NaN or infinite; the optimizer did not step.

    ``step`` is the number of the optimizer step being computed (1 for the first update), matching
    the step of its logged metrics and of the checkpoint it would have produced; ``where`` names
    the value (e.g. ``"loss"``) and ``parameter`` the first parameter, in ``named_parameters()``
    order, whose gradient is non-finite (None when the error is not about a gradient).
    """

    def __init__(self, message: str, *, step: int, where: str, parameter: str | None = None) -> None:
        super().__init__(message)
        self.step = step
        self.where = where
        self.parameter = parameter


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or unreadable; the message names its path."""


class DistributedSetupError(RuntimeError):
    """The processes are not set up the way the requested strategy needs, so training would be wrong."""


class OutputDirError(RuntimeError):
    """``run.output_dir`` cannot hold a run (it or a parent is a file, or it is not writable)."""


class Terminated(BaseException):
    """SIGTERM arrived (a scheduler preempting the job, ``kill``, ``timeout``); raised in the main
    thread by ``mrlm-train``'s handler, so that a run ends as on Ctrl-C, its last finished step saved
    (see :meth:`~mrlm.train.loop.TrainingSession.maybe_save`). A BaseException, like
    KeyboardInterrupt, so that no ``except Exception`` on the way swallows it."""
