"""Build the tiny test model, save it, load it back and generate one chat reply.

Shows that ``mrlm.train.tiny`` produces an ordinary Hugging Face model directory: it is written
with ``save_pretrained``, loaded back from the local path with ``AutoModelForCausalLM`` and
``AutoTokenizer`` (nothing is downloaded), and the chat template turns a conversation into a prompt
from which the model generates an assistant turn. The weights are random, so the reply is noise;
what matters is that every step works without the Hugging Face Hub.

Run:

    uv run python examples/build_tiny_model.py --output runs/tiny
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import tyro
from transformers import AutoModelForCausalLM, AutoTokenizer

from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, count_parameters, save_tiny


@dataclass(frozen=True)
class Args:
    """Build, save, reload and chat with the tiny model."""

    output: Path = Path("runs/tiny")
    """Directory for the model and tokenizer."""
    max_new_tokens: int = 24
    """Length limit of the generated reply."""
    seed: int = 0
    """Seed of the weights and of sampling."""


def build_and_save(output: Path, seed: int) -> Path:
    """Build the tiny tokenizer and model and save both into ``output``."""
    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(tokenizer, seed=seed)
    path = save_tiny(output, model, tokenizer)
    print(f"saved {count_parameters(model):,}-parameter model and {len(tokenizer)}-token tokenizer to {path}")
    return path


def chat_once(path: Path, max_new_tokens: int, seed: int) -> None:
    """Load the saved pair like any local checkpoint and generate one assistant reply."""
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)

    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is 2 + 3?"},
    ]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert isinstance(prompt, str)
    print(f"prompt:\n{prompt}")

    inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    torch.manual_seed(seed)
    # transformers 5 declares generate's `self` as a protocol its Auto classes do not match.
    output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=True)  # type: ignore[misc]
    new_tokens = output[0, inputs["input_ids"].shape[1] :].tolist()

    # Generation ends at <|im_end|> (the tokenizer's eos) or at the length limit.
    stopped = "at <|im_end|>" if tokenizer.eos_token_id in new_tokens else "at the length limit"
    reply = tokenizer.decode(new_tokens, skip_special_tokens=True)
    print(f"reply ({len(new_tokens)} tokens, stopped {stopped}): {reply!r}")


def main(args: Args) -> None:
    """Run the example end to end, printing each step."""
    path = build_and_save(args.output, args.seed)
    chat_once(path, args.max_new_tokens, args.seed)


if __name__ == "__main__":
    main(tyro.cli(Args))
