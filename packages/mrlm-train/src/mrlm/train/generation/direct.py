"""Running Llama-family models straight from their weights: decoding, and log-probs with shared prompts.

A Hugging Face forward pass costs far more than its arithmetic when its inputs are small: module
calls, attention-mask construction, cache bookkeeping and output objects run on every call, and
during decoding (one token per row per call) they are most of the time. For the architectures in
:data:`SUPPORTED_MODEL_TYPES` (pre-norm blocks of RMSNorm, rotary self-attention with grouped
key/value heads, a gated MLP) a :class:`DirectModel` runs the same computation as a short sequence
of tensor operations on the model's own parameters:

* the q, k and v projections of a layer are one matrix product (their weights concatenated);
* the rotary embedding of q and k is one complex multiplication: within each head the rows of the q
  and k projections are reordered so that the two coordinates a rotation mixes are adjacent (attention
  scores are dot products of q and k, which reordering both alike leaves unchanged);
* decoding writes keys and values in place into tensors sized for the prompt and the whole
  completion; on CPU a float32 step of a few rows multiplies with the kernel of
  :mod:`~mrlm.train.generation.few_rows`, which reads each weight at about twice MKL's speed, where
  that pays (:func:`~mrlm.train.generation.few_rows.kernel_rows`), and where it takes every
  product of the step, runs each layer as one call into it (and the final norm with the output
  projection as another, where it takes that one: :func:`fused_layers`); otherwise it computes
  ``(W x^T)^T`` rather than ``x W^T``: the same sums, which MKL runs faster when ``x`` has the few
  rows of a decoding step;
* a float32 model on CPU decoding more rows, for long enough, first copies its weights into
  oneDNN's blocked layout (:func:`packs_weights`), on which a step's products run faster than MKL's;
* rows that begin with the same tokens (the members of a GRPO group share their prompt) compute that
  prefix once: one prefill per distinct prompt when decoding, and, for :meth:`DirectModel.token_logprobs`,
  one differentiable pass over each distinct prefix, whose keys and values every row's remaining
  tokens attend to (prefixes and the rest go through each layer together, one product per weight).

The numbers are the model's own up to float rounding (the same operations, in another order).
Models it would not reproduce (other architectures, sliding-window or length-dependent rotary
variants, adapters or wrappers, autocast, activation checkpointing, attention dropout in training)
are refused by :func:`direct_model_or_reason`, and callers use the model's forward instead.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 (the usual name)

from mrlm.train.generation import few_rows as few_row_kernel
from mrlm.train.generation.memory import available_cpu_memory
from mrlm.train.generation.sampling import row_chunks, selected_logprobs

SUPPORTED_MODEL_TYPES = frozenset({"llama", "qwen2", "mistral"})
"""``config.model_type`` values whose ``*ForCausalLM`` classes :class:`DirectModel` reproduces."""

_DYNAMIC_ROPE = ("dynamic", "longrope")  # their frequencies change with the sequence length


PACK_MIN_TOKENS = 16
"""The smallest token budget for which CPU decoding packs the weights for oneDNN first."""
PACK_MIN_ROWS = 8
"""The fewest rows (completions decoded together) for which CPU decoding packs the weights."""
PACK_MIN_HIDDEN = 256
"""The narrowest model whose CPU decoding packs the weights.

Packing copies every matrix of the model into oneDNN's blocked layout, once per ``start``, and each
decoding step's products then run on it; that pays only when the steps are many and their products
large. Measured on a 2-core CPU, two models decoding 32 tokens side by side (one thread each), at
hidden 512 / 4 layers: 8 rows each 408 ms unpacked against 316 ms packed, 16 rows 545 against 403
ms, but 4 rows 296 against 292 ms; at 256 / 2, 16 rows 95 against 83 ms. One model on two threads,
512 / 4, 16 rows of 64 tokens: 667 against 494 ms; 8 rows of 32: 246 against 210 ms; 4 rows: 157
against 171 ms. At hidden 128 packing costs more than it saves (16 rows: 30 against 38 ms)."""


def _onednn_packing() -> bool:
    """Whether this torch can pack linear weights for oneDNN (x86 builds can)."""
    try:
        return torch.backends.mkldnn.is_available() and callable(torch.ops.mkldnn._reorder_linear_weight)
    except (AttributeError, RuntimeError):
        return False


_ONEDNN = _onednn_packing()


def packs_weights(model: Any, rows: int, budget: int) -> bool:
    """Whether decoding ``rows`` rows for up to ``budget`` tokens packs ``model``'s weights: float32
    on CPU with oneDNN, enough rows, tokens and width to pay (:data:`PACK_MIN_ROWS`,
    :data:`PACK_MIN_TOKENS`, :data:`PACK_MIN_HIDDEN`), rows the few-rows kernel does not take
    (it reads the weights faster than oneDNN's packed products, and needs no copy), and a packed copy
    of the weights that takes at most a quarter of the memory available now (a large model decodes
    unpacked rather than run short)."""
    embedding = model.get_input_embeddings().weight
    if not (
        _ONEDNN
        and embedding.device.type == "cpu"
        and embedding.dtype == torch.float32
        and rows >= PACK_MIN_ROWS
        and budget >= PACK_MIN_TOKENS
        and embedding.shape[-1] >= PACK_MIN_HIDDEN
    ):
        return False
    if rows <= few_row_kernel.kernel_rows(embedding):
        return False
    available = available_cpu_memory()
    copy = sum(p.numel() * p.element_size() for p in model.parameters())
    return available is not None and 4 * copy <= available


class _Projection:
    """``x -> x W^T + bias`` on the parameter itself (differentiable, any device).

    ``few_rows=True`` (CPU decoding): a 2-D input of at most
    :func:`~mrlm.train.generation.few_rows.kernel_rows` rows goes to the few-rows kernel (float32,
    no gradient recorded, few torch threads); otherwise it is multiplied as ``(W x^T)^T``. For the
    handful of rows of a decoding step MKL runs that product markedly faster than ``x W^T``;
    measured on a 2-core CPU, a decoding step of 16 rows at hidden 512 / 4 layers took 8.5-8.9 ms
    against 11.1-11.9 ms with MKL-packed weights (and 4 rows at 128 / 2 layers 0.43 ms against
    0.50-0.63).

    ``packed_rows`` (CPU float32 decoding, see :func:`packs_weights`): a copy of the weight in
    oneDNN's layout for products of about that many rows, used for every 2-D input (decoding steps
    and the first token's logits). Not differentiable; 3-D inputs (prefill) use the weight itself.
    """

    def __init__(
        self, weight: torch.Tensor, bias: torch.Tensor | None, few_rows: bool, packed_rows: int = 0
    ) -> None:
        self.weight, self.bias, self.few_rows = weight, bias, few_rows
        self.packed = (
            torch.ops.mkldnn._reorder_linear_weight(weight.detach(), packed_rows) if packed_rows else None
        )
        self.kernel_rows = _kernel_rows(weight, bias) if few_rows else 0
        self.kernel = few_row_kernel.few_rows_kernel() if self.kernel_rows else None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed is not None and x.dim() == 2:
            return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
        if self.few_rows and x.dim() == 2:
            if self.kernel is not None and x.shape[0] <= self.kernel_rows:
                return self.kernel.product(x, self.weight, self.bias)
            if self.bias is None:
                product = torch.mm(self.weight, x.t())
            else:
                product = torch.addmm(self.bias.unsqueeze(1), self.weight, x.t())
            return product.t().contiguous()
        return F.linear(x, self.weight, self.bias)


def _kernel_rows(weight: torch.Tensor, bias: torch.Tensor | None, threads: int | None = None) -> int:
    """The rows of a decoding step on ``threads`` torch threads (default: this thread's count) whose
    products with this weight and bias go to the few-rows kernel: its
    :func:`~mrlm.train.generation.few_rows.kernel_rows`, for contiguous tensors (which it reads
    with stride 1); 0 for others."""
    if not weight.is_contiguous() or (bias is not None and not bias.is_contiguous()):
        return 0
    return few_row_kernel.kernel_rows(weight, threads)


class _Norm:
    """RMSNorm over the last dimension with the model's weight (differentiable, any device)."""

    def __init__(self, weight: torch.Tensor, eps: float) -> None:
        self.weight, self.eps = weight, eps

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


class _Embedding:
    """Token ids to the model's input embeddings."""

    def __init__(self, weight: torch.Tensor) -> None:
        self.weight = weight

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.weight)


#: A layer's pieces as the passes call them: tensors in, tensors out.
_Op = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class _Layer:
    """One decoder block's parameters, as the direct passes use them."""

    input_norm: _Op
    qkv: _Op  # q and k rows in rotary-pair order, then v
    o_proj: _Op
    post_norm: _Op
    gate: _Op
    up: _Op
    down: _Op
    act: _Op


@dataclass
class _Part:
    """Tokens of one pass of :meth:`DirectModel.scored_states`: ``[N, S]`` ids, ``[N, S, d/2]``
    rotary factors and an additive attention mask ``[N, 1, S, K]``."""

    ids: torch.Tensor
    rotations: torch.Tensor
    mask: torch.Tensor


@dataclass
class _Weights:
    embed: _Op
    layers: list[_Layer]
    final_norm: _Op
    lm_head: _Op


@dataclass
class _DecodeState:
    """The cache and per-row bookkeeping of one batch being decoded (``n`` live rows)."""

    weights: _Weights
    keys: list[torch.Tensor]
    """Per layer ``[n, Hkv, S, d]``: S = prompt width + token budget; slots past ``length`` unused."""
    values: list[torch.Tensor]
    mask: torch.Tensor
    """``[n, 1, 1, S]`` float: 0 where a row may attend, ``-inf`` on its left padding."""
    rotations: torch.Tensor
    """``[n, budget, d / 2]`` complex: the rotary factor of each row's generated positions."""
    length: int
    """Filled cache slots (the prompt width, then one more per step)."""
    fused: _FusedLayers | None = None
    """The layers as one kernel call each (None: torch's operations between the products)."""
    step: int = 0
    """Tokens fed back so far."""


class DirectModel:
    """Prefill, single-token decoding steps and log-probs of a supported causal LM, without its ``forward``.

    Build it with :func:`direct_model_or_reason`. It reads the model's parameters on every call, so
    it follows training updates; it never changes the model.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        backbone = model.model
        self.rotary = backbone.rotary_emb
        self.silu = str(getattr(model.config, "hidden_act", "")) in ("silu", "swish")
        first = backbone.layers[0].self_attn
        self.head_dim = int(first.head_dim)
        self.num_heads = int(first.q_proj.out_features) // self.head_dim
        self.num_kv_heads = int(first.k_proj.out_features) // self.head_dim
        self.eps = float(backbone.norm.variance_epsilon)
        half = self.head_dim // 2
        # Within each head, coordinate i is rotated with i + d/2; interleaving them makes each pair
        # adjacent, as a complex number needs.
        pairs = torch.stack([torch.arange(half), torch.arange(half) + half], dim=1).flatten()
        self._q_order = (torch.arange(self.num_heads).unsqueeze(1) * self.head_dim + pairs).flatten()
        self._k_order = (torch.arange(self.num_kv_heads).unsqueeze(1) * self.head_dim + pairs).flatten()

    # ------------------------------------------------------------------ decoding

    def start(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        rows: torch.Tensor,
        budget: int,
    ) -> tuple[DirectDecoding, torch.Tensor]:
        """Prefill distinct prompts and lay out a cache for ``len(rows)`` rows and ``budget`` more tokens.

        Call under ``torch.inference_mode()`` (or ``no_grad``). Where :func:`packs_weights` says it
        pays, the decoding steps run on a packed copy of the weights, made here and freed with the
        decoding.

        Args:
            input_ids: ``[U, W]`` distinct prompts, left-padded.
            attention_mask: ``[U, W]`` 1 on prompt tokens, 0 on padding.
            rows: ``[B]`` which prompt each row of the batch continues.
            budget: most tokens each row will generate.

        Returns:
            The decoding of the batch and ``[B, V]`` logits of each row's first generated token.
        """
        device = input_ids.device
        packed = packs_weights(self.model, rows.shape[0], budget)
        weights = self._weights(few_rows=device.type == "cpu", packed_rows=rows.shape[0] if packed else 0)
        width = input_ids.shape[1]
        real = attention_mask.bool()
        positions = _positions(attention_mask)  # [U, W]
        generated = positions[:, -1:] + 1 + torch.arange(budget, device=device)  # [U, budget]
        rotations = self._rotations(torch.cat([positions, generated], dim=1))  # [U, W + budget, d/2]
        hidden, keys, values = self._forward(
            weights.layers, input_ids, rotations[:, :width], _self_mask(real)
        )
        logits = weights.lm_head(weights.final_norm(hidden[:, -1]))[rows]

        total = width + budget
        mask = _additive(torch.cat([real, real.new_ones((real.shape[0], budget))], dim=1), hidden.dtype)
        state = _DecodeState(
            weights=weights,
            keys=[_cache(k, rows, total) for k in keys],
            values=[_cache(v, rows, total) for v in values],
            mask=mask[rows][:, None, None, :],
            rotations=rotations[rows, width:],
            length=width,
            fused=fused_layers(weights, self, rows.shape[0], total) if device.type == "cpu" else None,
        )
        return DirectDecoding(self, state), logits

    def decode_step(self, state: _DecodeState, tokens: torch.Tensor) -> torch.Tensor:
        """Feed each live row's last token ``[n]``; return the ``[n, V]`` logits of the next one."""
        if tokens.shape[0] != state.keys[0].shape[0]:
            raise ValueError(f"{tokens.shape[0]} tokens for the {state.keys[0].shape[0]} rows being decoded")
        logits = (
            self._step(state, tokens) if state.fused is None else self._fused_step(state, state.fused, tokens)
        )
        state.length += 1
        state.step += 1
        return logits

    def _step(self, state: _DecodeState, tokens: torch.Tensor) -> torch.Tensor:
        """A decoding step as torch operations between the products."""
        slot, n = state.length, tokens.shape[0]
        rotation = state.rotations[:, state.step].unsqueeze(1)  # [n, 1, d/2]
        groups = self.num_heads // self.num_kv_heads
        mask = state.mask[..., : slot + 1]
        hidden = state.weights.embed(tokens)  # [n, D]
        for layer, keys, values in zip(state.weights.layers, state.keys, state.values, strict=True):
            q, k, v = self._qkv(layer, hidden, rotation)  # [n, H, d]
            keys[:, :, slot].copy_(k)
            values[:, :, slot].copy_(v)
            # The g query heads sharing a key/value head attend together: [n, Hkv, g, d].
            attended = F.scaled_dot_product_attention(
                q.view(n, self.num_kv_heads, groups, self.head_dim),
                keys[:, :, : slot + 1],
                values[:, :, : slot + 1],
                attn_mask=mask,
            )
            hidden = self._block_rest(layer, hidden, attended.reshape(n, -1))
        return state.weights.lm_head(state.weights.final_norm(hidden))

    def _fused_step(self, state: _DecodeState, fused: _FusedLayers, tokens: torch.Tensor) -> torch.Tensor:
        """A decoding step as one kernel call per layer, and one for the final norm and output
        projection where the kernel takes the latter."""
        hidden = state.weights.embed(tokens)  # [n, D], updated in place layer by layer
        turn = torch.view_as_real(state.rotations[:, state.step]).contiguous()  # [n, d/2, 2]
        for layer, keys, values in zip(fused.layers, state.keys, state.values, strict=True):
            fused.kernel.decode_layer(
                layer, hidden, turn, keys, values, state.mask, state.length, fused.scratch
            )
        if fused.head is None:
            return state.weights.lm_head(state.weights.final_norm(hidden))
        norm, weight, bias = fused.head
        return fused.kernel.normed_product(hidden, norm, self.eps, weight, bias, fused.scratch)

    @staticmethod
    def keep_rows(state: _DecodeState, live: torch.Tensor) -> None:
        """Keep only rows ``live`` (indices into the current rows) of a decoding state."""
        state.keys = [k.index_select(0, live) for k in state.keys]
        state.values = [v.index_select(0, live) for v in state.values]
        state.mask = state.mask.index_select(0, live)
        state.rotations = state.rotations.index_select(0, live)

    # ------------------------------------------------------------------ log-probs for training

    def token_logprobs(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        completion_mask: torch.Tensor,
        temperature: float,
    ) -> torch.Tensor:
        """What :func:`mrlm.train.generation.logprobs.token_logprobs` returns, computed directly.

        Columns before the first scored one form a prefix; rows whose prefixes are equal (token for
        token, padding included) share one pass over it, and the rest of each row attends to its
        keys and values. Differentiable; the shared pass receives the gradients of all its rows.

        Args:
            input_ids, attention_mask, completion_mask: ``[B, T]``, as for ``token_logprobs``.
            temperature: the sampling temperature (0 means greedy, scored at 1).

        Returns:
            ``[B, T]`` float32 log-probs, 0 where ``completion_mask`` is 0 and in column 0.
        """
        scored = completion_mask.bool()
        states, split = self.scored_states(input_ids, attention_mask, completion_mask)
        targets = input_ids[:, split:]
        lm_head = self._weights(few_rows=False).lm_head
        vocab = int(self.model.get_output_embeddings().weight.shape[0])
        chunks = row_chunks(states.shape[0], states.shape[1] * vocab)
        shifted = torch.cat(
            [selected_logprobs(lm_head(states[rows]), targets[rows], temperature) for rows in chunks]
        )  # [B, T - split]
        logp = F.pad(shifted, (split, 0))
        return torch.where(scored, logp, torch.zeros_like(logp))

    def scored_states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, completion_mask: torch.Tensor
    ) -> tuple[torch.Tensor, int]:
        """The final (normed) hidden states that predict the scored tokens, as the model's
        ``last_hidden_state``: ``[B, T - split, D]`` for positions ``split - 1 .. T - 2`` (state
        ``j`` predicts column ``split + j``), and ``split``, the first scored column (with nothing
        scored, the last). A value head on them gives the values of those columns' states.

        Columns before ``split`` form a prefix; rows whose prefixes are equal (token for token,
        padding included) share one pass over it, and the rest of each row attends to its keys and
        values. Differentiable; the shared pass receives the gradients of all its rows.
        """
        length = input_ids.shape[1]
        scored = completion_mask.bool()
        columns = scored[:, 1:].any(dim=0).nonzero()
        # Prefix: the columns before the first scored one (with nothing scored, all but the last).
        split = int(columns[0]) + 1 if columns.numel() else length - 1
        weights = self._weights(few_rows=False)
        real = attention_mask.bool()
        rotations = self._rotations(_positions(attention_mask))  # [B, T, d/2]

        prefix_ids = torch.cat([input_ids[:, :split], attention_mask[:, :split].to(input_ids.dtype)], dim=1)
        distinct, row_prefix = torch.unique(prefix_ids, dim=0, return_inverse=True)  # [U, 2 split], [B]
        first_rows = torch.zeros(distinct.shape[0], dtype=torch.long, device=input_ids.device)
        first_rows.scatter_(0, row_prefix, torch.arange(input_ids.shape[0], device=input_ids.device))
        prefix = _Part(
            input_ids[first_rows, :split], rotations[first_rows, :split], _self_mask(real[first_rows, :split])
        )
        if length - 1 == split:  # nothing after the prefix but the last column
            shared, _, _ = self._forward(weights.layers, prefix.ids, prefix.rotations, prefix.mask)
            return self._final_norm(shared[row_prefix, -1:]), split
        # The rest, without the last column (it predicts nothing): attends to its row's prefix.
        rest = slice(split, length - 1)
        allowed = torch.cat(
            [real[:, None, :split].expand(-1, length - 1 - split, -1), _self_allowed(real[:, rest])], dim=2
        )  # [B, S, split + S]
        tail = _Part(input_ids[:, rest], rotations[:, rest], _additive(allowed.unsqueeze(1), torch.float32))
        shared, rows = self._forward_with_tail(weights.layers, prefix, tail, row_prefix)
        hidden = torch.cat([shared[row_prefix].unsqueeze(1), rows], dim=1)  # [B, T - split, D]
        return self._final_norm(hidden), split

    # ------------------------------------------------------------------ pieces

    def _forward(
        self, layers: list[_Layer], input_ids: torch.Tensor, rotations: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """Every layer over ``[N, S]`` tokens; returns hidden states ``[N, S, D]`` (before the final
        norm) and each layer's keys and values ``[N, Hkv, S, d]``. ``mask`` is additive, ``[N, 1, S, S]``.
        """
        hidden = F.embedding(input_ids, self._embedding())  # [N, S, D]
        rotation = rotations.unsqueeze(2)  # [N, S, 1, d/2]
        keys, values = [], []
        for layer in layers:
            q, k, v = self._qkv(layer, hidden, rotation)  # [N, S, H, d]
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            keys.append(k)
            values.append(v)
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
            hidden = self._block_rest(layer, hidden, attended.transpose(1, 2).flatten(2))
        return hidden, keys, values

    def _forward_with_tail(
        self, layers: list[_Layer], prefix: _Part, tail: _Part, row_prefix: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Every layer over distinct prefixes ``[U, P]`` and the rows' tails ``[B, S]``, the tail
        of row ``i`` attending to prefix ``row_prefix[i]`` (its mask ``[B, 1, S, P + S]``) and to
        itself; returns the hidden states (before the final norm) of each prefix's last token
        ``[U, D]`` and of the tails ``[B, S, D]``.

        Both go through each layer together, their tokens as the rows of one matrix: each weight
        is then one product forward and one backward (with the passes one after the other, each
        weight's gradient is two products of very different sizes and their sum). In the last
        layer a prefix's other tokens only give keys and values: their attention output and MLP,
        which nothing reads, are not computed.
        """
        (units, width), (batch, size) = prefix.ids.shape, tail.ids.shape
        split = units * width
        embedding = self._embedding()
        hidden = torch.cat(
            [F.embedding(prefix.ids, embedding).flatten(0, 1), F.embedding(tail.ids, embedding).flatten(0, 1)]
        )
        rotation = torch.cat([prefix.rotations.flatten(0, 1), tail.rotations.flatten(0, 1)]).unsqueeze(1)
        for index, layer in enumerate(layers):
            q, k, v = self._qkv(layer, hidden, rotation)  # [N, H, d]: prefix tokens, then tail tokens
            q_prefix, k_prefix, v_prefix = (
                x[:split].unflatten(0, (units, width)).transpose(1, 2) for x in (q, k, v)
            )
            q_tail, k_tail, v_tail = (
                x[split:].unflatten(0, (batch, size)).transpose(1, 2) for x in (q, k, v)
            )
            last = index == len(layers) - 1
            queries, mask = (q_prefix[:, :, -1:], prefix.mask[:, :, -1:]) if last else (q_prefix, prefix.mask)
            attended_prefix = F.scaled_dot_product_attention(
                queries, k_prefix, v_prefix, attn_mask=mask, enable_gqa=True
            )
            attended_tail = F.scaled_dot_product_attention(
                q_tail,
                torch.cat([k_prefix[row_prefix], k_tail], dim=2),
                torch.cat([v_prefix[row_prefix], v_tail], dim=2),
                attn_mask=tail.mask,
                enable_gqa=True,
            )
            attended = torch.cat(
                [attended_prefix.transpose(1, 2).flatten(0, 1), attended_tail.transpose(1, 2).flatten(0, 1)]
            ).flatten(1)
            if last:  # the prefixes' last tokens, then the tails
                hidden = torch.cat([hidden[:split].unflatten(0, (units, width))[:, -1], hidden[split:]])
                split = units
            hidden = self._block_rest(layer, hidden, attended)
        return hidden[:units], hidden[split:].unflatten(0, (batch, size))

    def _weights(self, few_rows: bool, packed_rows: int = 0) -> _Weights:
        device = self._embedding().device
        q_order, k_order = self._q_order.to(device), self._k_order.to(device)
        layers = []
        for block in self.model.model.layers:
            attention, mlp = block.self_attn, block.mlp
            q, k, v = attention.q_proj, attention.k_proj, attention.v_proj
            weight = torch.cat([q.weight[q_order], k.weight[k_order], v.weight])
            bias = None
            if q.bias is not None or k.bias is not None or v.bias is not None:
                bias = torch.cat([_bias(q)[q_order], _bias(k)[k_order], _bias(v)])
            gate, up = mlp.gate_proj, mlp.up_proj
            layers.append(
                _Layer(
                    input_norm=_Norm(block.input_layernorm.weight, self.eps),
                    qkv=_Projection(weight, bias, few_rows, packed_rows),
                    o_proj=_Projection(attention.o_proj.weight, attention.o_proj.bias, few_rows, packed_rows),
                    post_norm=_Norm(block.post_attention_layernorm.weight, self.eps),
                    gate=_Projection(gate.weight, gate.bias, few_rows, packed_rows),
                    up=_Projection(up.weight, up.bias, few_rows, packed_rows),
                    down=_Projection(mlp.down_proj.weight, mlp.down_proj.bias, few_rows, packed_rows),
                    act=F.silu if self.silu else mlp.act_fn,
                )
            )
        head = self.model.get_output_embeddings()
        return _Weights(
            embed=_Embedding(self._embedding()),
            layers=layers,
            final_norm=_Norm(self.model.model.norm.weight, self.eps),
            lm_head=_Projection(head.weight, head.bias, few_rows, packed_rows),
        )

    def _qkv(
        self, layer: _Layer, hidden: torch.Tensor, rotation: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rotated q ``[..., Hq, d]``, rotated k and v ``[..., Hkv, d]`` of ``hidden`` ``[..., D]``."""
        normed = layer.input_norm(hidden)
        qkv = layer.qkv(normed)
        qkv = qkv.view(*hidden.shape[:-1], self.num_heads + 2 * self.num_kv_heads, self.head_dim)
        rotated_heads = self.num_heads + self.num_kv_heads
        pairs = qkv[..., :rotated_heads, :].unflatten(-1, (self.head_dim // 2, 2))
        qk = torch.view_as_real(torch.view_as_complex(pairs) * rotation).flatten(-2)
        return qk[..., : self.num_heads, :], qk[..., self.num_heads :, :], qkv[..., rotated_heads:, :]

    def _block_rest(self, layer: _Layer, hidden: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """The attention output projection, the residuals and the MLP."""
        hidden = hidden + layer.o_proj(attended)
        normed = layer.post_norm(hidden)
        return hidden + layer.down(layer.act(layer.gate(normed)) * layer.up(normed))

    def _final_norm(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(hidden, (hidden.shape[-1],), self.model.model.norm.weight, self.eps)

    def _embedding(self) -> torch.Tensor:
        weight: torch.Tensor = self.model.model.embed_tokens.weight
        return weight

    def _rotations(self, positions: torch.Tensor) -> torch.Tensor:
        """``[..., d/2]`` complex rotary factors of ``positions``, from the model's own rotary module."""
        probe = torch.empty((), dtype=torch.float32, device=positions.device)
        cos, sin = self.rotary(probe, positions)
        half = self.head_dim // 2
        return torch.complex(cos[..., :half].float(), sin[..., :half].float())


@dataclass
class _FusedLayers:
    """A decoding step's layers as one call each to the few-rows library's ``mrlm_decode_layer``
    (:meth:`~mrlm.train.generation.few_rows.FewRowsKernel.decode_layer`): its norms, rotary
    embedding, cache writes, attention, products and residuals in C, without a torch operation
    between them. ``layers`` point into ``tensors``, held here so that a parameter given new storage
    during the decoding (``p.data = ...``) leaves the decoding on the storage it started with rather
    than on freed memory; updates in place are seen (but for q, k and v, which every decoding,
    fused or not, reads from one copy made when it starts)."""

    kernel: few_row_kernel.FewRowsKernel
    layers: list[few_row_kernel.DecodeLayer]
    tensors: list[torch.Tensor]
    scratch: torch.Tensor
    head: tuple[torch.Tensor, torch.Tensor, torch.Tensor | None] | None
    """The final norm's weight and the output projection's weight and bias, when the kernel takes
    that projection (then one call with the norm); None: torch's operations."""


def fused_layers(weights: _Weights, model: DirectModel, rows: int, slots: int) -> _FusedLayers | None:
    """The layers of ``weights`` fused for a CPU decoding of ``rows`` rows and ``slots`` cache slots,
    or None where the few-rows kernel does not take every projection of every layer for that many
    rows (see :func:`_kernel_rows`), packed weights are used, a norm's weight is not contiguous, or
    the MLP's activation is not SiLU. :func:`decodes_fused` says beforehand whether a decoding will be.

    Between the kernel's products, a step's torch operations (norms, rotary, attention, residuals)
    took about 1 ms a token, several times their cost in a loop of their own (an RMSNorm of 4 rows:
    40-85 us a call in place, 11 us alone), presumably as the weights read in between evict what they
    need from the caches; two models decoding side by side also wait on each other for the GIL
    between operations. Measured on a 2-core CPU, a 512 / 4-layer Qwen2 decoding 4 rows on one
    thread: 3.95-4.10 ms a token fused against 4.86-5.20 ms (its products alone 3.7-4.0 ms); two
    such models side by side, 4.4-4.9 against 5.7-6.3 ms a token each."""
    parts = [_fusable(layer) for layer in weights.layers]
    if not model.silu or any(part is None for part in parts):
        return None
    projections = [projection for part in parts if part is not None for projection in part[0]]
    kernel = projections[0].kernel
    if kernel is None or rows > min(projection.kernel_rows for projection in projections):
        return None
    tensors: list[torch.Tensor] = []
    layers = [_decode_layer(model, *part, tensors) for part in parts if part is not None]
    # Layers may differ in width (a pruned MLP): the scratch serves the widest.
    scratch = max((kernel.decode_scratch(layer, rows, slots) for layer in layers), key=torch.Tensor.numel)
    head, norm = weights.lm_head, weights.final_norm
    fused_head = (
        (norm.weight, head.weight, head.bias)
        if isinstance(head, _Projection)
        and head.kernel is not None
        and head.packed is None
        and rows <= head.kernel_rows
        and isinstance(norm, _Norm)
        and norm.weight.is_contiguous()
        else None
    )
    return _FusedLayers(kernel, layers, tensors, scratch, fused_head)


def _fusable(layer: _Layer) -> tuple[list[_Projection], list[_Norm]] | None:
    """The layer's projections (qkv, o, gate, up, down) and norms (input, post-attention) when the
    kernel takes every projection, unpacked, and the norms' weights are contiguous; else None."""
    projections = [
        p
        for p in (layer.qkv, layer.o_proj, layer.gate, layer.up, layer.down)
        if isinstance(p, _Projection) and p.kernel is not None and p.packed is None
    ]
    norms = [
        n for n in (layer.input_norm, layer.post_norm) if isinstance(n, _Norm) and n.weight.is_contiguous()
    ]
    return (projections, norms) if len(projections) == 5 and len(norms) == 2 else None


def _decode_layer(
    model: DirectModel, projections: list[_Projection], norms: list[_Norm], tensors: list[torch.Tensor]
) -> few_row_kernel.DecodeLayer:
    """The C description of one layer, pointing into its tensors, which are added to ``tensors``
    (whose holder keeps their storages)."""

    def pointer(tensor: torch.Tensor | None) -> int | None:
        if tensor is None:
            return None
        tensors.append(tensor.detach())  # shares, and so holds, the storage
        return tensor.data_ptr()

    named = list(zip(("qkv", "o", "gate", "up", "down"), projections, strict=True))
    return few_row_kernel.DecodeLayer(
        hidden=projections[1].weight.shape[0],  # o_proj's outputs
        heads=model.num_heads,
        kv_heads=model.num_kv_heads,
        head_dim=model.head_dim,
        intermediate=projections[2].weight.shape[0],  # the gate's outputs
        eps=model.eps,
        input_norm=pointer(norms[0].weight),
        post_norm=pointer(norms[1].weight),
        **{name: pointer(p.weight) for name, p in named},
        **{f"{name}_bias": pointer(p.bias) for name, p in named},
    )


def decodes_fused(model: DirectModel, rows: int, threads: int) -> bool:
    """Whether a CPU decoding of ``rows`` rows on ``threads`` torch threads will run its layers
    fused (:func:`fused_layers`, which decides once the decoding has laid out its weights): SiLU,
    contiguous norm weights, and no more rows than the kernel takes of every projection (q, k and v
    as the one contiguous copy a decoding makes of them)."""
    if not model.silu or rows < 1:
        return False
    limits = []
    with torch.no_grad():  # as decoding runs
        for block in model.model.model.layers:
            attention, mlp = block.self_attn, block.mlp
            norms = (block.input_layernorm.weight, block.post_attention_layernorm.weight)
            if not all(norm.is_contiguous() for norm in norms):
                return False
            limits.append(few_row_kernel.kernel_rows(attention.q_proj.weight, threads))
            for linear in (attention.o_proj, mlp.gate_proj, mlp.up_proj, mlp.down_proj):
                limits.append(_kernel_rows(linear.weight, linear.bias, threads))
    return rows <= min(limits)


class DirectDecoding:
    """One batch being decoded by a :class:`DirectModel` (what :meth:`DirectModel.start` returns)."""

    def __init__(self, model: DirectModel, state: _DecodeState) -> None:
        self.model = model
        self.state: _DecodeState | None = state

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed each live row's last token ``[n]``; return the ``[n, V]`` logits of the next one."""
        if self.state is None:
            raise RuntimeError("this decoding is closed")
        return self.model.decode_step(self.state, tokens)

    def keep(self, live: torch.Tensor) -> None:
        """Keep only rows ``live`` (indices into the current rows), e.g. when the others stopped."""
        if self.state is None:
            raise RuntimeError("this decoding is closed")
        self.model.keep_rows(self.state, live)

    def close(self) -> None:
        """Free the cache now."""
        self.state = None


_CHECKED: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def direct_model_or_reason(model: Any, *, training: bool = False) -> DirectModel | str:
    """A :class:`DirectModel` for ``model``, or why it cannot have one (then use its forward).

    With ``training``, also refuses what only matters when gradients flow: activation checkpointing
    and attention dropout in train mode. The structural checks run once per model.
    """
    if hasattr(model, "_original_forward"):
        return "the model's forward runs under mixed-precision autocast"
    try:
        reason = _CHECKED.get(model)
    except TypeError:  # not weak-referenceable
        reason = None
    if reason is None:
        reason = _unsupported(model)
        with contextlib.suppress(TypeError):
            _CHECKED[model] = reason
    if reason:
        return reason
    device = model.model.embed_tokens.weight.device
    if torch.is_autocast_enabled(device.type):
        return "autocast is on"
    if training and _checkpointing(model):
        return "activation checkpointing"
    if training and model.training and float(getattr(model.config, "attention_dropout", 0.0) or 0.0) > 0:
        return "attention dropout in train mode"
    return DirectModel(model)


def _unsupported(model: Any) -> str:
    """Why ``model`` is not one :class:`DirectModel` reproduces; "" when it is."""
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        return f"model type {model_type!r} is not one of {sorted(SUPPORTED_MODEL_TYPES)}"
    backbone: Any = getattr(model, "model", None)
    if type(model).__name__ != f"{type(backbone).__name__.removesuffix('Model')}ForCausalLM":
        return f"{type(model).__name__} is not a plain *ForCausalLM (a wrapper or adapter?)"
    if any(p.dtype != torch.float32 for p in model.parameters()):
        return "weights other than float32"
    if any(kind != "full_attention" for kind in getattr(config, "layer_types", None) or ()):
        return "sliding-window attention layers"
    if model_type == "mistral" and getattr(config, "sliding_window", None) is not None:
        return "sliding-window attention"
    rope_type = str(getattr(backbone.rotary_emb, "rope_type", "default"))
    if any(name in rope_type for name in _DYNAMIC_ROPE):
        return f"rotary embedding {rope_type!r} depends on the sequence length"
    if model.get_output_embeddings() is None:
        return "no output embeddings"
    blocks = list(backbone.layers)
    if not blocks:
        return "no decoder layers"
    try:
        attention = blocks[0].self_attn
        head_dim = int(attention.head_dim)
        if (
            head_dim % 2
            or attention.q_proj.out_features % head_dim
            or attention.k_proj.out_features % head_dim
        ):
            return "unexpected attention shapes"
        if float(attention.scaling) != head_dim**-0.5:
            return "attention scaling other than 1/sqrt(head_dim)"
        if any(type(block.self_attn) is not type(attention) for block in blocks):
            return "layers of different kinds"
        linears = [model.get_output_embeddings()]
        for block in blocks:
            linears += [getattr(block.self_attn, name) for name in ("q_proj", "k_proj", "v_proj", "o_proj")]
            linears += [getattr(block.mlp, name) for name in ("gate_proj", "up_proj", "down_proj")]
        if any(type(linear) is not torch.nn.Linear for linear in linears):
            return "projections that are not plain torch.nn.Linear (adapters or quantization?)"
        probe = torch.arange(4, device=backbone.embed_tokens.weight.device).unsqueeze(0)
        cos, _ = backbone.rotary_emb(torch.empty((), dtype=torch.float32, device=probe.device), probe)
        if cos.shape[-1] != head_dim or not torch.equal(cos[..., : head_dim // 2], cos[..., head_dim // 2 :]):
            return "partial or interleaved rotary embedding"
    except (AttributeError, TypeError) as error:
        return f"unexpected module layout ({error})"
    return ""


def _checkpointing(model: Any) -> bool:
    # The newer name first: the older one warns that it is deprecated.
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):
        if hasattr(type(model), name):
            return bool(getattr(model, name))
    return False


def _positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counting attended tokens only (padding gets 0), as the trainers feed the model."""
    return (attention_mask.long().cumsum(dim=-1) - 1).clamp(min=0)


def _self_allowed(real: torch.Tensor) -> torch.Tensor:
    """``[N, S, S]``: which of the ``S`` tokens (``real`` ``[N, S]``) each one attends to, causally.

    A padding position attends to itself only, so that it stays finite; nothing attends to it.
    """
    size = real.shape[1]
    causal = torch.ones((size, size), dtype=torch.bool, device=real.device).tril()
    diagonal = torch.eye(size, dtype=torch.bool, device=real.device)
    return causal & (real.unsqueeze(1) | diagonal)


def _self_mask(real: torch.Tensor) -> torch.Tensor:
    """``[N, 1, S, S]`` additive form of :func:`_self_allowed`."""
    return _additive(_self_allowed(real).unsqueeze(1), torch.float32)


def _cache(prompt: torch.Tensor, rows: torch.Tensor, total: int) -> torch.Tensor:
    """``[B, Hkv, total, d]`` with each row's prompt keys (or values) in the first slots."""
    cache = prompt.new_empty((rows.shape[0], prompt.shape[1], total, prompt.shape[3]))
    cache[:, :, : prompt.shape[2]] = prompt[rows]
    return cache


def _bias(linear: Any) -> torch.Tensor:
    if linear.bias is not None:
        bias: torch.Tensor = linear.bias
        return bias
    return linear.weight.new_zeros(linear.out_features)


def _additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """0 where ``allowed``, ``-inf`` elsewhere: a mask added to attention scores."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return mask.masked_fill_(~allowed, float("-inf"))
