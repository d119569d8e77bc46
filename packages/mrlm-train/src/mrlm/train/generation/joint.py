"""Sampling from several models of one shape at once: one pass per decoding step for all of them.

On CPU a small model's decoding step costs little arithmetic and many tensor operations, each with
a fixed overhead, and Python threads running two models side by side mostly wait for each other
(the interpreter runs one operation's set-up at a time). When the policies of a round are separate
models of the same shapes (the agents of a multi-agent run), :func:`generate_jointly` stacks their
weights once per call and decodes all their rows together: every projection of a step is one
batched product over the models (``torch.bmm``) and attention one call over every row, so a step
costs about one model's operations. That pays only while the overhead dominates: for models no
wider than :data:`JOINT_MAX_HIDDEN` with at most :data:`JOINT_MAX_ROWS` rows each (a GRPO group or
two); past them the products dominate, and the models run faster side by side. So do models that
each decode fused on their share of the threads (:func:`~mrlm.train.generation.direct.decodes_fused`:
a step's layers one call each into the few-rows kernel, with no operation overhead left to share),
which leaves joint decoding to models narrower than the kernel takes (128), or with more rows or
threads than it takes, or without it. Measured on a 2-core CPU, MAGRPO with two 128 / 2-layer
agents, 4 rows each on one thread each, stepped in 0.041-0.045 s side by side fused against
0.056-0.059 s jointly (rollout 0.019-0.021 against 0.030-0.034 s); rollouts at hidden 192, 4 rows,
0.031-0.041 against 0.051-0.065 s, and at hidden 128, 8 rows, 0.025-0.028 against 0.041-0.046 s.
Two threads per model (on more than two cores) were not measured.

Each model prefills its own prompts (:meth:`~mrlm.train.generation.direct.DirectModel.start`); their
caches are then laid side by side, left-padded to the widest prompt (masked). Each call keeps its
own noise stream (its ``SamplingParams.seed``), so a row gets the completion its model's own
``generate`` gives it, up to float rounding: a batched product sums in another order than a
single one. Rows that stop keep being computed until every row has stopped (the batched products
need as many rows per model); their results are dropped.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 (the usual name)

from mrlm.train.generation.base import Completion, SamplingParams
from mrlm.train.generation.direct import (
    DirectModel,
    _DecodeState,
    _Embedding,
    _Layer,
    _Norm,
    _Projection,
    _Weights,
    decodes_fused,
    direct_model_or_reason,
)
from mrlm.train.generation.hf import HFGenerator, completions_of, decode_loop, prompt_layout
from mrlm.train.generation.memory import check_fits, is_allocation_failure, out_of_memory
from mrlm.train.loop.cpu_threads import thread_share

JOINT_MAX_HIDDEN = 192
"""The widest models decoded jointly."""

JOINT_MAX_ROWS = 16
"""The most rows per model decoded jointly.

Past these bounds a step's products cost more than its per-operation overhead, and two threads each
running one model (side by side) beat one batched product. Measured on a 2-core CPU, two 2-layer
models each decoding 24-32 tokens, jointly against side by side: 4 rows each at hidden 128 56 against
74 ms, at 192 102 against 123 ms, at 256 143 against 112 ms, at 512 (4 layers) 701 against 391 ms;
at hidden 64, 16 rows 51 against 64 ms, 32 rows 90 against 80 ms, 128 rows 235 against 131 ms."""


def joint_reason(
    generators: Sequence[object], prompts: Sequence[Sequence[Sequence[int]]], params: Sequence[SamplingParams]
) -> str:
    """Why these calls cannot be sampled by :func:`generate_jointly`; "" when they can.

    They can when there are at least two, every generator is an :class:`HFGenerator` decoding
    directly on CPU a model :mod:`~mrlm.train.generation.direct` supports, no wider than
    :data:`JOINT_MAX_HIDDEN`, the models have the same parameter names and shapes, activation and
    rotary frequencies, every call has the same number of prompts (at most :data:`JOINT_MAX_ROWS`),
    the sampling parameters and stop ids agree (seeds aside), and not every model would decode fused
    on its share of the threads side by side. Those are the calls that decode faster jointly than
    side by side.
    """
    if len(generators) < 2:
        return "fewer than two calls"
    if len(prompts) != len(generators) or len(params) != len(generators):
        return (
            f"{len(generators)} generators, {len(prompts)} prompt lists and {len(params)} sampling "
            "parameters: one of each per call"
        )
    hf = [g for g in generators if isinstance(g, HFGenerator)]
    if len(hf) < len(generators) or not all(g.direct for g in hf):
        return "not every generator decodes a model in this process directly"
    if any(g.device.type != "cpu" for g in hf):
        return "a model is not on CPU"
    if not all(prompts):
        return "a call has no prompts"
    if len({len(p) for p in prompts}) != 1:
        return "the calls have different numbers of prompts"
    if len(prompts[0]) > JOINT_MAX_ROWS:
        return f"more than {JOINT_MAX_ROWS} prompts per call: these decode faster side by side"
    if len({dataclasses.replace(p, seed=None, stop_token_ids=None, ignore_stop=False) for p in params}) != 1:
        return "the calls sample differently"
    if len({g.stop_ids(p) for g, p in zip(hf, params, strict=True)}) != 1:
        return "the models stop on different tokens"
    directs = [direct_model_or_reason(g.model) for g in hf]
    for direct in directs:
        if isinstance(direct, str):
            return direct
    models = [d for d in directs if isinstance(d, DirectModel)]
    share = thread_share(len(models))  # each model's threads, side by side
    if all(decodes_fused(model, len(prompts[0]), share) for model in models):
        return "each model decodes fused on its own threads: faster side by side"
    return _shape_difference(models)


def _shape_difference(models: Sequence[DirectModel]) -> str:
    first = models[0]
    if not first.silu:
        return "an activation other than SiLU"
    width = int(first.model.model.embed_tokens.weight.shape[1])
    if width > JOINT_MAX_HIDDEN:
        return f"hidden size {width} > {JOINT_MAX_HIDDEN}: these decode faster side by side"
    signature = _signature(first)
    for other in models[1:]:
        if _signature(other) != signature:
            return "the models have different shapes"
        ours, theirs = getattr(first.rotary, "inv_freq", None), getattr(other.rotary, "inv_freq", None)
        if (
            not isinstance(ours, torch.Tensor)
            or not isinstance(theirs, torch.Tensor)
            or not torch.equal(ours, theirs)
        ):
            return "the models have different rotary frequencies"
    return ""


def _signature(model: DirectModel) -> tuple[object, ...]:
    shapes = tuple((name, tuple(p.shape), p.dtype) for name, p in model.model.named_parameters())
    scaling = float(getattr(model.rotary, "attention_scaling", 1.0))
    return (model.num_heads, model.num_kv_heads, model.head_dim, model.eps, model.silu, scaling, shapes)


def generate_jointly(
    generators: Sequence[HFGenerator],
    prompts: Sequence[Sequence[Sequence[int]]],
    params: Sequence[SamplingParams],
) -> list[list[Completion]]:
    """Each call's completions (``generators[i].generate(prompts[i], params[i])``), decoded together.

    Requires :func:`joint_reason` to be "" (raises ``ValueError`` with the reason otherwise). An
    unseeded call draws its seed from torch's global RNG, in call order, as its ``generate`` would.
    """
    reason = joint_reason(generators, prompts, params)
    if reason:
        raise ValueError(f"these calls cannot be decoded jointly: {reason}")
    if any(len(p) == 0 for call in prompts for p in call):
        raise ValueError("every prompt needs at least one token")
    device, budget, rows = generators[0].device, params[0].max_new_tokens, len(prompts[0])
    width = max(len(p) for call in prompts for p in call)
    for generator in generators:
        check_fits(generator.model, rows, width, budget, device)
    rngs = []
    for call in params:
        rng = torch.Generator(device=device)
        rng.manual_seed(call.seed if call.seed is not None else int(torch.randint(0, 2**62, ()).item()))
        rngs.append(rng)

    def noise() -> torch.Tensor:
        return torch.cat([torch.rand(rows, generator=rng, device=device) for rng in rngs])

    models = [DirectModel(g.model) for g in generators]
    try:
        with _eval_mode(generators), torch.inference_mode():
            starts = [
                model.start(*prompt_layout(call, g.pad_token_id, device), budget)
                for model, g, call in zip(models, generators, prompts, strict=True)
            ]
            decoding = _JointDecoding(models[0], [d.state for d, _ in starts if d.state is not None])
            logits = torch.cat([first for _, first in starts])
            for own, _ in starts:
                own.close()  # their caches were copied into the joint one
            del starts
            stop_ids = generators[0].stop_ids(params[0])
            sampled = decode_loop(decoding, logits, params[0], stop_ids, noise, generators[0].pad_token_id)
    except (RuntimeError, MemoryError) as error:
        if not is_allocation_failure(error):
            raise
        raise out_of_memory(error, rows * len(generators), width, budget) from error
    completions = completions_of(*sampled)
    return [completions[i * rows : (i + 1) * rows] for i in range(len(generators))]


@contextlib.contextmanager
def _eval_mode(generators: Sequence[HFGenerator]) -> Iterator[None]:
    """Every model in eval mode for the block; those that were training are switched back after."""
    switched = [g.model for g in generators if g.model.training]
    for model in switched:
        model.eval()
    try:
        yield
    finally:
        for model in switched:
            model.train()


class _JointDecoding:
    """Several models' prefilled rows decoded as one batch (a ``Decoding`` of :mod:`~.hf`).

    ``keep`` only narrows which rows' logits are returned: every row is still computed, since each
    batched product needs as many rows per model.
    """

    def __init__(self, model: DirectModel, states: Sequence[_DecodeState]) -> None:
        self.model = model
        self.state: _DecodeState | None = _merged(states)
        total = self.state.keys[0].shape[0]
        self.live: torch.Tensor | None = None  # rows still returned; None: all
        self.fed = torch.zeros(total, dtype=torch.long, device=self.state.keys[0].device)

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.state is None:
            raise RuntimeError("this decoding is closed")
        if self.live is None:
            return self.model.decode_step(self.state, tokens)
        self.fed[self.live] = tokens  # stopped rows are fed anything: their logits are dropped
        return self.model.decode_step(self.state, self.fed)[self.live]

    def keep(self, live: torch.Tensor) -> None:
        self.live = live if self.live is None else self.live[live]

    def close(self) -> None:
        self.state = None


def _merged(states: Sequence[_DecodeState]) -> _DecodeState:
    """One decoding state over every row of ``states`` (one per model, same row count and budget):
    caches left-padded to the widest prompt, padding masked, weights stacked."""
    width = max(s.length for s in states)
    budget = states[0].rotations.shape[1]
    total = width + budget
    first = states[0]
    count = sum(s.mask.shape[0] for s in states)
    mask = first.mask.new_full((count, 1, 1, total), float("-inf"))
    start = 0
    for state in states:
        rows = slice(start, start + state.mask.shape[0])
        mask[rows, ..., width - state.length :] = state.mask
        start = rows.stop
    return _DecodeState(
        weights=_stacked([s.weights for s in states]),
        keys=[_padded([s.keys[i] for s in states], states, width, total) for i in range(len(first.keys))],
        values=[_padded([s.values[i] for s in states], states, width, total) for i in range(len(first.keys))],
        mask=mask,
        rotations=torch.cat([s.rotations for s in states]),
        length=width,
    )


def _padded(
    caches: Sequence[torch.Tensor], states: Sequence[_DecodeState], width: int, total: int
) -> torch.Tensor:
    """``[sum B, Hkv, total, d]``: each model's filled slots ending at ``width``, zeros before them
    (masked, but finite so that masked scores stay finite)."""
    first = caches[0]
    joint = first.new_zeros((sum(c.shape[0] for c in caches), first.shape[1], total, first.shape[3]))
    start = 0
    for cache, state in zip(caches, states, strict=True):
        rows = slice(start, start + cache.shape[0])
        joint[rows, :, width - state.length : width] = cache[:, :, : state.length]
        start = rows.stop
    return joint


def _stacked(weights: Sequence[_Weights]) -> _Weights:
    """The models' weights stacked along a leading model dimension, as batched operations."""
    layers = [
        _Layer(
            input_norm=_StackedNorm([w.layers[i].input_norm for w in weights]),
            qkv=_StackedProjection([w.layers[i].qkv for w in weights]),
            o_proj=_StackedProjection([w.layers[i].o_proj for w in weights]),
            post_norm=_StackedNorm([w.layers[i].post_norm for w in weights]),
            gate=_StackedProjection([w.layers[i].gate for w in weights]),
            up=_StackedProjection([w.layers[i].up for w in weights]),
            down=_StackedProjection([w.layers[i].down for w in weights]),
            act=weights[0].layers[i].act,
        )
        for i in range(len(weights[0].layers))
    ]
    return _Weights(
        embed=_StackedEmbedding([w.embed for w in weights]),
        layers=layers,
        final_norm=_StackedNorm([w.final_norm for w in weights]),
        lm_head=_StackedProjection([w.lm_head for w in weights]),
    )


def _of_type(ops: Sequence[object], kind: type) -> list[Any]:
    if not all(isinstance(op, kind) for op in ops):
        raise TypeError(f"expected {kind.__name__} pieces")
    return list(ops)


class _StackedProjection:
    """``[M * n, in] -> [M * n, out]``: rows ``m * n .. (m + 1) * n`` through model ``m``'s projection."""

    def __init__(self, projections: Sequence[object]) -> None:
        parts: list[_Projection] = _of_type(projections, _Projection)
        # x W^T as one batched product over a transposed view of [M, out, in] (stacking the
        # transposes instead copies slowly and runs no faster).
        self.weight_t = torch.stack([p.weight for p in parts]).transpose(1, 2)
        biases = [p.bias for p in parts if p.bias is not None]
        if biases and len(biases) < len(parts):
            raise ValueError("some projections have a bias and some have none")
        self.bias = torch.stack(biases).unsqueeze(1) if biases else None  # [M, 1, out]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.view(self.weight_t.shape[0], -1, x.shape[-1])  # [M, n, in]
        if self.bias is None:
            product = torch.bmm(rows, self.weight_t)
        else:
            product = torch.baddbmm(self.bias, rows, self.weight_t)
        return product.view(-1, self.weight_t.shape[2])


class _StackedNorm:
    """RMSNorm of ``[M * n, D]`` rows, model ``m``'s weight on rows ``m * n .. (m + 1) * n``."""

    def __init__(self, norms: Sequence[object]) -> None:
        parts: list[_Norm] = _of_type(norms, _Norm)
        self.weight = torch.stack([n.weight for n in parts]).unsqueeze(1)  # [M, 1, D]
        self.eps = parts[0].eps

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[-1]
        normed = F.rms_norm(x.view(self.weight.shape[0], -1, size), (size,), None, self.eps)
        return (normed * self.weight).view(-1, size)


class _StackedEmbedding:
    """Token ids ``[M * n]`` to embeddings, model ``m``'s table for rows ``m * n .. (m + 1) * n``."""

    def __init__(self, embeddings: Sequence[object]) -> None:
        parts: list[_Embedding] = _of_type(embeddings, _Embedding)
        self.vocab = parts[0].weight.shape[0]
        self.weight = torch.cat([e.weight for e in parts])  # [M * V, D]
        self.models = len(parts)
        self._offsets: dict[int, torch.Tensor] = {}

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        offsets = self._offsets.get(ids.shape[0])
        if offsets is None:
            per_model = ids.shape[0] // self.models
            offsets = torch.arange(self.models, device=ids.device).repeat_interleave(per_model) * self.vocab
            self._offsets[ids.shape[0]] = offsets
        return F.embedding(ids + offsets, self.weight)
