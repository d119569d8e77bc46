"""In-process batched sampling from a Hugging Face causal LM, with a KV cache.

One forward pass per step for the whole batch: the prompts are left-padded and prefilled together,
then each step feeds one token per live row. A row that emits a stop token leaves the batch (its
cache rows are dropped), so the steps after it cost only what the rows still generating need.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import torch

from mrlm.train.generation.base import Completion, FinishReason, SamplingParams
from mrlm.train.generation.logprobs import position_ids_from_mask
from mrlm.train.generation.sampling import sample_next


class HFGenerator:
    """A :class:`~mrlm.train.generation.base.Generator` running ``model`` in this process.

    Args:
        model: a causal LM (``AutoModelForCausalLM``, possibly wrapped by peft) whose forward takes
            ``input_ids``, ``attention_mask``, ``position_ids``, ``past_key_values``, ``use_cache``.
        tokenizer: supplies the padding id and the default stop ids. It is not modified: padding
            side and pad token are handled here.

    Default stop ids (``SamplingParams.stop_token_ids=None``): the tokenizer's eos plus the model's
    ``generation_config.eos_token_id``, as ``model.generate`` would stop.

    ``generate`` runs under ``torch.inference_mode`` with the model in eval mode (restored after).
    The same ``SamplingParams.seed``, prompts and weights give the same completions; with
    ``seed=None`` the noise is seeded from torch's global RNG, so ``torch.manual_seed`` governs it.
    Row ``b`` at step ``t`` always gets the same random number for a given seed, whatever the other
    rows do; its completion still depends on its position in the batch, not on its neighbours' ends.
    """

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model = model
        self.pad_token_id = _pad_id(tokenizer)
        self.default_stop_ids = _default_stop_ids(model, tokenizer)
        # Prefill needs only the last position's logits; most models can skip the rest.
        forward = inspect.signature(model.forward).parameters
        self._keep_last: dict[str, int] = {"logits_to_keep": 1} if "logits_to_keep" in forward else {}

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        """One completion per prompt, in order; see :class:`SamplingParams` for the options."""
        if not prompts:
            return []
        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        stop_ids: tuple[int, ...] = ()
        if not params.ignore_stop:
            stop_ids = self.default_stop_ids if params.stop_token_ids is None else params.stop_token_ids
        seed = params.seed if params.seed is not None else int(torch.randint(0, 2**62, ()).item())
        rng = torch.Generator(device=self.device)
        rng.manual_seed(seed)

        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                tokens, logprobs, lengths, stopped = self._sample(prompts, params, stop_ids, rng)
        finally:
            self.model.train(was_training)

        completions = []
        for row, n in enumerate(lengths.tolist()):
            reason: FinishReason = "stop" if stopped[row] else "length"
            completions.append(Completion(tokens[row][:n], logprobs[row][:n], reason))
        return completions

    def _sample(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        stop_ids: Sequence[int],
        rng: torch.Generator,
    ) -> tuple[list[list[int]], list[list[float]], torch.Tensor, list[bool]]:
        """The decoding loop. Returns per-row token and log-prob lists (padded to ``max_new_tokens``),
        ``[B]`` lengths and whether each row ended on a stop token."""
        device = self.device
        batch, budget = len(prompts), params.max_new_tokens
        width = max(len(p) for p in prompts)

        input_ids = torch.full((batch, width), self.pad_token_id, dtype=torch.long)
        # One mask buffer for the whole run, sliced per step, instead of a concatenation per step.
        attention = torch.zeros((batch, width + budget), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.as_tensor(list(prompt), dtype=torch.long)
            attention[row, width - len(prompt) : width] = 1
        input_ids, attention = input_ids.to(device), attention.to(device)
        positions = position_ids_from_mask(attention[:, :width])

        out_tokens = torch.full((batch, budget), self.pad_token_id, dtype=torch.long, device=device)
        out_logprobs = torch.zeros((batch, budget), dtype=torch.float32, device=device)
        lengths = torch.full((batch,), budget, dtype=torch.long, device=device)
        stopped = torch.zeros(batch, dtype=torch.bool, device=device)
        stop_tensor = torch.tensor(list(stop_ids), dtype=torch.long, device=device)

        output = self.model(
            input_ids=input_ids,
            attention_mask=attention[:, :width],
            position_ids=positions,
            use_cache=True,
            **self._keep_last,
        )
        cache = output.past_key_values
        logits = output.logits[:, -1, :]
        next_positions = positions[:, -1:] + 1  # [live, 1]
        rows = torch.arange(batch, device=device)  # original row of each live row

        for step in range(budget):
            # Noise for every original row, live or not: a row's draws never depend on when the
            # other rows stopped.
            noise = None if params.greedy else torch.rand(batch, generator=rng, device=device)[rows]
            tokens, logprobs = sample_next(logits, params, noise)
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
                    cache.reorder_cache(live)
                    rows, tokens = rows[live], tokens[live]
                    attention, next_positions = attention[live], next_positions[live]
            if last_step:
                break
            attention[:, width + step] = 1
            output = self.model(
                input_ids=tokens.unsqueeze(1),
                attention_mask=attention[:, : width + step + 1],
                position_ids=next_positions,
                past_key_values=cache,
                use_cache=True,
            )
            logits = output.logits[:, -1, :]
            next_positions = next_positions + 1

        return out_tokens.tolist(), out_logprobs.tolist(), lengths.cpu(), stopped.tolist()


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
