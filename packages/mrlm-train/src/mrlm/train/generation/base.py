"""What a generation backend takes and returns, independent of how it runs.

Algorithms talk to a :class:`Generator`; the in-process :class:`~mrlm.train.generation.hf.HFGenerator`
is one backend, an inference server (vLLM, SGLang) can be another, without touching the algorithms.

Log-probability convention (every backend must follow it): ``Completion.logprobs[i]`` is the log
probability of ``token_ids[i]`` under ``softmax(logits / T)``, where ``logits`` are the model's raw
next-token logits and ``T`` is :func:`logprob_temperature` of the sampling temperature. It is taken
*before* top-k / top-p truncation, so a trainer recomputes the same number with one forward pass and
:func:`~mrlm.train.generation.logprobs.token_logprobs` at the same temperature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion per prompt."""

    max_new_tokens: int = 256
    """Most tokens generated per completion, stop token included."""
    temperature: float = 1.0
    """Softmax temperature; 0 means greedy decoding (argmax)."""
    top_p: float = 1.0
    """Nucleus sampling: keep the smallest set of tokens whose probability reaches top_p (1 = off)."""
    top_k: int = 0
    """Keep only the top_k most likely tokens (0 = off)."""
    stop_token_ids: tuple[int, ...] | None = None
    """A completion ends after any of these tokens; None uses the backend's defaults (the eos ids)."""
    ignore_stop: bool = False
    """Never stop early: every completion has exactly max_new_tokens tokens (benchmarks)."""
    seed: int | None = None
    """Seed of the sampling noise: the same seed, prompts and weights give the same completions."""

    def __post_init__(self) -> None:
        check_sampling(self.max_new_tokens, self.temperature, self.top_p, self.top_k)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def check_sampling(max_new_tokens: int, temperature: float, top_p: float, top_k: int = 0) -> None:
    """Raise ValueError naming the first of these sampling settings that is out of range.

    :class:`SamplingParams` checks itself with it; run configs call it when they are built, so a bad
    value is refused before any model loads.
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    if not temperature >= 0:  # NaN too
        raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if top_k < 0:
        raise ValueError(f"top_k must be >= 0 (0 = off), got {top_k}")


def logprob_temperature(temperature: float) -> float:
    """The temperature at which log-probs are recorded: ``temperature``, or 1 for greedy decoding."""
    return temperature if temperature > 0 else 1.0


@dataclass(frozen=True)
class Completion:
    """One generated continuation of a prompt.

    ``token_ids`` and ``logprobs`` have the same length; when ``finish_reason`` is ``"stop"`` the last
    token is the stop token, which counts as generated (it is trained on like any other token).
    """

    token_ids: list[int]
    """The generated tokens, without the prompt and without padding."""
    logprobs: list[float] = field(repr=False)
    """Log-prob of each generated token (see the module docstring for the convention)."""
    finish_reason: FinishReason
    """"stop": ended with a stop token; "length": reached max_new_tokens without one."""

    def __post_init__(self) -> None:
        if len(self.token_ids) != len(self.logprobs):
            raise ValueError(f"{len(self.token_ids)} tokens but {len(self.logprobs)} logprobs")


@runtime_checkable
class Generator(Protocol):
    """A generation backend: token ids in, completions out."""

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        """One completion per prompt, in prompt order. Prompts may have different lengths."""
        ...
