"""In-process batched sampling from a Hugging Face causal LM, with a KV cache.

One forward pass per step for the whole batch: the distinct prompts are left-padded and prefilled
together (rows repeating a prompt, as the members of a group do, share its prefill), then each step
feeds one token per live row. A row that emits a stop token leaves the batch (its cache rows are
dropped), so the steps after it cost only what the rows still generating need. Llama, Qwen2 and
Mistral models run these passes straight from their weights (:mod:`mrlm.train.generation.direct`),
any other model through its forward.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

from mrlm.train.generation.base import Completion, FinishReason, SamplingParams
from mrlm.train.generation.direct import DirectModel, direct_model_or_reason
from mrlm.train.generation.logprobs import position_ids_from_mask
from mrlm.train.generation.memory import check_fits, is_allocation_failure, out_of_memory
from mrlm.train.generation.sampling import sample_next


class HFGenerator:
    """A :class:`~mrlm.train.generation.base.Generator` running ``model`` in this process.

    Args:
        model: a causal LM (``AutoModelForCausalLM``, possibly wrapped by peft) whose forward takes
            ``input_ids``, ``attention_mask``, ``position_ids``, ``past_key_values``, ``use_cache``.
        tokenizer: supplies the padding id and the default stop ids. It is not modified: padding
            side and pad token are handled here.
        direct: decode Llama, Qwen2 and Mistral models straight from their weights
            (:mod:`mrlm.train.generation.direct`: the same numbers up to float rounding, several
            times faster on small models); False always uses the model's forward.

    Default stop ids (``SamplingParams.stop_token_ids=None``): the tokenizer's eos plus the model's
    ``generation_config.eos_token_id``, as ``model.generate`` would stop.

    ``generate`` runs under ``torch.inference_mode`` with the model in eval mode (restored after).
    A batch that cannot fit in memory raises
    :class:`~mrlm.train.generation.memory.GenerationMemoryError` naming ``max_new_tokens``.
    The same ``SamplingParams.seed``, prompts and weights give the same completions; with
    ``seed=None`` the noise is seeded from torch's global RNG, so ``torch.manual_seed`` governs it.
    Row ``b`` at step ``t`` always gets the same random number for a given seed, whatever the other
    rows do; its completion still depends on its position in the batch, not on its neighbours' ends.
    """

    def __init__(self, model: Any, tokenizer: Any, *, direct: bool = True) -> None:
        self.model = model
        self.pad_token_id = _pad_id(tokenizer)
        self.default_stop_ids = _default_stop_ids(model, tokenizer)
        # Prefill needs only the last position's logits; most models can skip the rest.
        forward = inspect.signature(model.forward).parameters
        self._keep_last: dict[str, int] = {"logits_to_keep": 1} if "logits_to_keep" in forward else {}
        self.direct = direct

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        """One completion per prompt, in order; see :class:`SamplingParams` for the options."""
        if not prompts:
            return []
        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        stop_ids = self.stop_ids(params)
        width = max(len(p) for p in prompts)
        check_fits(self.model, len(prompts), width, params.max_new_tokens, self.device)
        seed = params.seed if params.seed is not None else int(torch.randint(0, 2**62, ()).item())
        rng = torch.Generator(device=self.device)
        rng.manual_seed(seed)

        # Switching modes walks every module: only when needed (a trainer usually switched already).
        was_training = self.model.training
        if was_training:
            self.model.eval()
        try:
            with torch.inference_mode():
                tokens, logprobs, lengths, stopped = self._sample(prompts, params, stop_ids, rng)
        except (RuntimeError, MemoryError) as error:
            if not is_allocation_failure(error):
                raise
            raise out_of_memory(error, len(prompts), width, params.max_new_tokens) from error
        finally:
            if was_training:
                self.model.train()

        return completions_of(tokens, logprobs, lengths, stopped)

    def stop_ids(self, params: SamplingParams) -> tuple[int, ...]:
        """The ids that end a completion under ``params``: none with ``ignore_stop``."""
        if params.ignore_stop:
            return ()
        return self.default_stop_ids if params.stop_token_ids is None else tuple(params.stop_token_ids)

    def _sample(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        stop_ids: Sequence[int],
        rng: torch.Generator,
    ) -> Sampled:
        """Prefill the prompts and run :func:`decode_loop` on them."""
        device = self.device
        batch, budget = len(prompts), params.max_new_tokens
        input_ids, attention, first = prompt_layout(prompts, self.pad_token_id, device)
        decoder = direct_model_or_reason(self.model) if self.direct else "turned off"
        decoding: Decoding
        if isinstance(decoder, DirectModel):
            decoding, logits = decoder.start(input_ids, attention, first, budget)
        else:
            decoding = _ForwardDecoding(self.model, self._keep_last)
            logits = decoding.start(input_ids, attention, first, budget)

        def noise() -> torch.Tensor:
            return torch.rand(batch, generator=rng, device=device)

        return decode_loop(decoding, logits, params, stop_ids, noise, self.pad_token_id)


#: Per-row token and log-prob lists (padded to ``max_new_tokens``), ``[B]`` lengths, and whether
#: each row ended on a stop token.
Sampled = tuple[list[list[int]], list[list[float]], torch.Tensor, list[bool]]


def prompt_layout(
    prompts: Sequence[Sequence[int]], pad_token_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The distinct prompts left-padded ``[U, W]``, their attention mask ``[U, W]``, and which of
    them each row continues ``[B]``: rows with the same prompt (a group's members) share its prefill."""
    width = max(len(p) for p in prompts)
    distinct: dict[tuple[int, ...], int] = {}
    prompt_of_row = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
    input_ids = torch.full((len(distinct), width), pad_token_id, dtype=torch.long)
    attention = torch.zeros((len(distinct), width), dtype=torch.long)
    for index, prompt in enumerate(distinct):
        input_ids[index, width - len(prompt) :] = torch.as_tensor(prompt, dtype=torch.long)
        attention[index, width - len(prompt) :] = 1
    first = torch.tensor(prompt_of_row, dtype=torch.long, device=device)
    return input_ids.to(device), attention.to(device), first


def decode_loop(
    decoding: Decoding,
    logits: torch.Tensor,
    params: SamplingParams,
    stop_ids: Sequence[int],
    noise: Callable[[], torch.Tensor],
    pad_token_id: int,
) -> Sampled:
    """Sample up to ``params.max_new_tokens`` tokens per row from a prefilled batch.

    ``logits`` ``[B, V]`` are the first token's; ``noise()`` gives the ``[B]`` uniforms of one
    step for every original row (drawn every step, live or not, so that a row's draws never depend
    on when the other rows stopped). A row that emits one of ``stop_ids`` leaves the batch.
    """
    device = logits.device
    batch, budget = logits.shape[0], params.max_new_tokens
    out_tokens = torch.full((batch, budget), pad_token_id, dtype=torch.long, device=device)
    out_logprobs = torch.zeros((batch, budget), dtype=torch.float32, device=device)
    lengths = torch.full((batch,), budget, dtype=torch.long, device=device)
    stopped = torch.zeros(batch, dtype=torch.bool, device=device)
    stop_tensor = torch.tensor(list(stop_ids), dtype=torch.long, device=device)
    rows = torch.arange(batch, device=device)  # original row of each live row
    all_live = True

    for step in range(budget):
        uniforms = None if params.greedy else noise()
        if uniforms is not None and not all_live:
            uniforms = uniforms[rows]
        tokens, logprobs = sample_next(logits, params, uniforms)
        if all_live:
            out_tokens[:, step] = tokens
            out_logprobs[:, step] = logprobs
        else:
            out_tokens[rows, step] = tokens
            out_logprobs[rows, step] = logprobs
        last_step = step == budget - 1
        if len(stop_ids) > 0:
            hit = torch.isin(tokens, stop_tensor)
            if bool(hit.any()):
                lengths[rows[hit]] = step + 1
                stopped[rows[hit]] = True
                live = (~hit).nonzero().squeeze(1)
                if live.numel() == 0 or last_step:
                    break
                # Drop finished rows everywhere, so later steps compute only live ones.
                decoding.keep(live)
                rows, tokens = rows[live], tokens[live]
                all_live = False
        if last_step:
            break
        logits = decoding.step(tokens)
    decoding.close()

    return out_tokens.tolist(), out_logprobs.tolist(), lengths.cpu(), stopped.tolist()


def completions_of(
    tokens: list[list[int]], logprobs: list[list[float]], lengths: torch.Tensor, stopped: list[bool]
) -> list[Completion]:
    """The completions of rows sampled by :func:`decode_loop`, trimmed to their lengths."""
    completions = []
    for row, n in enumerate(lengths.tolist()):
        reason: FinishReason = "stop" if stopped[row] else "length"
        completions.append(Completion(tokens[row][:n], logprobs[row][:n], reason))
    return completions


class Decoding(Protocol):
    """A batch being decoded: feed tokens, get the next logits, drop rows, free it all."""

    def step(self, tokens: torch.Tensor) -> torch.Tensor: ...

    def keep(self, live: torch.Tensor) -> None: ...

    def close(self) -> None: ...


class _ForwardDecoding:
    """Decoding through the model's own forward and its dynamic KV cache (any causal LM)."""

    def __init__(self, model: Any, keep_last: dict[str, int]) -> None:
        self.model, self.keep_last = model, keep_last

    def start(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, rows: torch.Tensor, budget: int
    ) -> torch.Tensor:
        """Prefill the distinct prompts ``[U, W]`` and expand the cache to ``rows`` ``[B]``; return
        the ``[B, V]`` logits of the first token."""
        width = input_ids.shape[1]
        positions = position_ids_from_mask(attention_mask)
        output = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=positions,
            use_cache=True,
            **self.keep_last,
        )
        self.cache = output.past_key_values
        if rows.numel() != input_ids.shape[0] or not torch.equal(
            rows, torch.arange(rows.numel(), device=rows.device)
        ):
            self.cache.reorder_cache(rows)
        # One mask buffer for the whole run, sliced per step, instead of a concatenation per step.
        self.attention = attention_mask.new_ones((rows.numel(), width + budget))
        self.attention[:, :width] = attention_mask[rows]
        self.length = width
        self.next_positions = positions[rows, -1:] + 1  # [live, 1]
        logits: torch.Tensor = output.logits[:, -1, :][rows]
        return logits

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        output = self.model(
            input_ids=tokens.unsqueeze(1),
            attention_mask=self.attention[:, : self.length + 1],
            position_ids=self.next_positions,
            past_key_values=self.cache,
            use_cache=True,
        )
        self.length += 1
        self.next_positions = self.next_positions + 1
        logits: torch.Tensor = output.logits[:, -1, :]
        return logits

    def keep(self, live: torch.Tensor) -> None:
        self.cache.reorder_cache(live)
        self.attention, self.next_positions = self.attention[live], self.next_positions[live]

    def close(self) -> None:
        del self.cache


def _pad_id(tokenizer: Any) -> int:
    """The tokenizer's pad id, else its eos id: any id works, padded slots are never attended."""
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    raise ValueError("the tokenizer has neither a pad token nor an eos token")


def _default_stop_ids(model: Any, tokenizer: Any) -> tuple[int, ...]:
    """Tokenizer eos first, then any extra eos ids of the model's generation config."""
    ids: list[int] = []
    if tokenizer.eos_token_id is not None:
        ids.append(int(tokenizer.eos_token_id))
    config = getattr(model, "generation_config", None)
    extra = getattr(config, "eos_token_id", None)
    if extra is not None:
        for token in [extra] if isinstance(extra, int) else list(extra):
            if int(token) not in ids:
                ids.append(int(token))
    return tuple(ids)
