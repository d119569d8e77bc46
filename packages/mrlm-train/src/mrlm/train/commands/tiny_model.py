"""``mrlm-train tiny-model``: build the tiny model and tokenizer and save them to a directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal


@dataclass(frozen=True)
class TinyModelArgs:
    """Build a tiny randomly initialised causal LM with a locally trained tokenizer and save both.

    The directory loads with AutoModelForCausalLM.from_pretrained and AutoTokenizer.from_pretrained.
    """

    output: Path
    """Directory to write; created if missing."""
    arch: Literal["qwen2", "llama"] = "qwen2"
    """Model architecture."""
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int | None = None
    """MLP width; defaults to 4 * hidden_size."""
    max_position_embeddings: int = 512
    vocab_size: int = 512
    """Tokenizer vocabulary size, including the 256 byte tokens and 3 special tokens; refused above
    what the built-in corpus can give (the message says how many that is)."""
    seed: int = 0
    """Seed of the weight initialisation."""

    def shape(self) -> dict[str, Any]:
        """The model's sizes, as :func:`~mrlm.train.tiny.build_tiny_model` and
        :func:`~mrlm.train.tiny.check_tiny_shape` take them."""
        return {
            "hidden_size": self.hidden_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "num_kv_heads": self.num_kv_heads,
            "intermediate_size": self.intermediate_size,
            "max_position_embeddings": self.max_position_embeddings,
        }

    def __post_init__(self) -> None:
        # Checked as the flags are read, before a tokenizer is trained; the builder checks them too.
        from mrlm.train.tiny import check_tiny_shape, check_tiny_vocab_size

        check_tiny_shape(**self.shape())
        check_tiny_vocab_size(self.vocab_size)  # a size the corpus cannot reach was quietly smaller


def run_tiny_model(args: TinyModelArgs) -> int:
    """Build, save, and print the parameter count and the output directory."""
    # Imported on use so that `mrlm-train --help` does not pay for torch and transformers.
    from mrlm.train.loop.output_dir import check_output_dir
    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, count_parameters, save_tiny

    check_output_dir(args.output, "output")  # before the tokenizer is trained
    tokenizer = build_tiny_tokenizer(vocab_size=args.vocab_size)
    model = build_tiny_model(tokenizer, arch=args.arch, seed=args.seed, **args.shape())
    path = save_tiny(args.output, model, tokenizer)
    print(f"tiny {args.arch} model: {count_parameters(model):,} parameters, vocab {len(tokenizer)}")
    print(f"saved to {path}")
    return 0
