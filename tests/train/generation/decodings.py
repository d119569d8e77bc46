"""What the decoding tests share: decodings started by hand, a thread count held for a while, and
decoding checked against the model's own forward."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.generation.base import Completion
from mrlm.train.generation.direct import DirectModel, _DecodeState


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch's thread count set to ``count`` inside, restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def started(model: Any, prompt: Sequence[int], rows: int, budget: int) -> _DecodeState:
    """The state of a decoding of ``rows`` rows continuing ``prompt``, started now (with this
    thread's torch threads) for ``budget`` tokens."""
    ids = torch.tensor([list(prompt)])
    with torch.inference_mode():
        decoding, _ = DirectModel(model).start(
            ids, torch.ones_like(ids), torch.zeros(rows, dtype=torch.long), budget
        )
    assert decoding.state is not None
    return decoding.state


def assert_decodes_like_forward(
    model: Any, tokenizer: Any, prompts: Sequence[Sequence[int]], params: SamplingParams
) -> list[Completion]:
    """Direct decoding's completions of ``prompts``, checked against those of the model's forward:
    the same tokens and finish reasons, log-probs within 1e-4."""
    direct = HFGenerator(model, tokenizer).generate(prompts, params)
    forward = HFGenerator(model, tokenizer, direct=False).generate(prompts, params)
    assert [c.token_ids for c in direct] == [c.token_ids for c in forward]
    assert [c.finish_reason for c in direct] == [c.finish_reason for c in forward]
    for ours, theirs in zip(direct, forward, strict=True):
        torch.testing.assert_close(
            torch.tensor(ours.logprobs), torch.tensor(theirs.logprobs), atol=1e-4, rtol=0
        )
    return direct
