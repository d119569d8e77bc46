"""Generation behind one small interface, so the backend can change without touching algorithms.

:class:`Generator` takes token ids and :class:`SamplingParams` and returns :class:`Completion` s
(tokens, their log-probs, why they ended). :class:`HFGenerator` samples in this process from a
Hugging Face model; :func:`token_logprobs` recomputes the same log-probs with one forward pass.
"""

from mrlm.train.generation.base import (
    Completion,
    FinishReason,
    Generator,
    SamplingParams,
    check_sampling,
    logprob_temperature,
)
from mrlm.train.generation.hf import HFGenerator
from mrlm.train.generation.logprobs import position_ids_from_mask, token_logprobs

__all__ = [
    "Completion",
    "FinishReason",
    "Generator",
    "HFGenerator",
    "SamplingParams",
    "check_sampling",
    "logprob_temperature",
    "position_ids_from_mask",
    "token_logprobs",
]
