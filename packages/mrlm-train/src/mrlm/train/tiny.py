"""A tiny causal LM and tokenizer built locally, for tests, examples and the quickstart.

Nothing here touches the Hugging Face Hub: the tokenizer is trained in memory on a built-in corpus
and the model is initialised from a config. Both save and load with the ordinary
``save_pretrained`` / ``AutoTokenizer.from_pretrained`` / ``AutoModelForCausalLM.from_pretrained``.

Token conventions (see :mod:`mrlm.train.chat_template`):

* ``eos_token`` is ``<|im_end|>``: chat generation stops at the end of the assistant turn;
* ``pad_token`` is ``<|endoftext|>``: distinct from eos, so masking padding never hides a real turn
  end;
* there is no ``bos_token`` in the tokenizer (nothing is prepended when encoding); the model
  config uses ``<|endoftext|>`` as its bos id, as Qwen2 does;
* ``generation_config.eos_token_id`` is ``[<|im_end|>, <|endoftext|>]`` so raw-text generation
  also stops at a document end;
* ``unk_token`` is ``<|endoftext|>`` only because Qwen2Tokenizer sets it on reload; byte-level BPE
  never produces an unknown token.

Text is NFC-normalised before splitting, exactly as transformers' Qwen2Tokenizer does. transformers
5 reloads any directory whose ``config.json`` says ``model_type: qwen2`` with that class, keeping
our vocabulary and merges but rebuilding the normaliser and pre-tokenizer; using its pipeline from
the start makes a built and a reloaded tokenizer encode identically for both architectures.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import (
    AutoModelForCausalLM,
    GenerationConfig,
    LlamaConfig,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerFast,
    Qwen2Config,
)
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX as QWEN2_SPLIT_PATTERN

from mrlm.train._tiny_corpus import tiny_corpus
from mrlm.train.chat_template import (
    CHATML_TEMPLATE,
    ENDOFTEXT,
    IM_END,
    IM_START,
    RESPONSE_TEMPLATE,
    SPECIAL_TOKENS,
)

Arch = Literal["qwen2", "llama"]

_BYTE_ALPHABET_SIZE = 256
#: The smallest vocabulary of :func:`build_tiny_tokenizer`: every byte and the special tokens.
MIN_VOCAB_SIZE = _BYTE_ALPHABET_SIZE + len(SPECIAL_TOKENS)


def build_tiny_tokenizer(
    corpus: Iterable[str] | None = None, vocab_size: int = 512
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer with the ChatML template.

    Args:
        corpus: training texts; defaults to the built-in English, chat, code and arithmetic corpus.
        vocab_size: total vocabulary size including the 256 byte tokens and the 3 special tokens.
            A corpus with too few frequent pairs yields fewer tokens; use ``len(tokenizer)``.

    Returns:
        A tokenizer for which ``decode(encode(s)) == unicodedata.normalize("NFC", s)``: lossless
        for any NFC text (nearly all text: emoji, CJK, code, control bytes, newlines), since every
        byte is in the base alphabet. Special tokens ``<|endoftext|>``=0, ``<|im_start|>``=1 and
        ``<|im_end|>``=2; eos ``<|im_end|>``, pad ``<|endoftext|>``, no bos, right padding, and
        ``chat_template`` set. The same corpus and ``vocab_size`` always give the same vocabulary
        and merges. ``response_template`` is set, so ``parse_response`` reads tool calls back.
    """
    if vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size must be at least {MIN_VOCAB_SIZE} (bytes + special tokens), got {vocab_size}"
        )
    texts = tiny_corpus() if corpus is None else corpus

    backend = Tokenizer(models.BPE())
    # Qwen2Tokenizer's pipeline (see the module docstring for why): NFC, its split pattern, then
    # bytes mapped to printable characters.
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        special_tokens=list(SPECIAL_TOKENS),
        # All 256 bytes, even those absent from the corpus, so unseen text stays encodable.
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    backend.train_from_iterator(texts, trainer=trainer)

    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        # Qwen2Tokenizer's default; never produced, since every byte has a token.
        unk_token=ENDOFTEXT,
        extra_special_tokens=[IM_START],
        chat_template=CHATML_TEMPLATE,
        # Parses sampled replies into content and tool calls (tokenizer.parse_response).
        response_template=copy.deepcopy(RESPONSE_TEMPLATE),
        # Cleaning spaces before punctuation would break the lossless round trip.
        clean_up_tokenization_spaces=False,
        padding_side="right",
    )


def check_tiny_vocab_size(vocab_size: int) -> None:
    """Raise ValueError unless :func:`build_tiny_tokenizer` gives ``vocab_size`` tokens from the
    built-in corpus: it is below :data:`MIN_VOCAB_SIZE`, or above what the corpus can give.

    BPE training stops early once no pair of tokens occurs twice more; the tokenizer it gives then
    holds every token the corpus can give, so its size is the most there is. It is measured by
    training (milliseconds on the built-in corpus) rather than stated, so it follows the corpus.
    """
    if vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size must be at least {MIN_VOCAB_SIZE} (bytes + special tokens), got {vocab_size}"
        )
    most = len(build_tiny_tokenizer(vocab_size=vocab_size))
    if most < vocab_size:
        raise ValueError(
            f"vocab_size must be at most {most}, got {vocab_size}: the built-in corpus gives no more "
            "tokens (bytes, special tokens and a merge for each pair it repeats)"
        )


#: The heads and positions of a tiny model unless told otherwise (:func:`build_tiny_model`).
DEFAULT_NUM_HEADS = 4
DEFAULT_NUM_KV_HEADS = 2
DEFAULT_MAX_POSITIONS = 512


def check_tiny_shape(
    *,
    hidden_size: int,
    num_layers: int,
    num_heads: int = DEFAULT_NUM_HEADS,
    num_kv_heads: int = DEFAULT_NUM_KV_HEADS,
    intermediate_size: int | None = None,
    max_position_embeddings: int = DEFAULT_MAX_POSITIONS,
) -> None:
    """Raise ValueError, naming the setting, for a shape :func:`build_tiny_model` would build
    broken (or fail on with an unrelated error): sizes below 1, query heads that key/value heads do
    not divide, or heads of an odd or fractional width (rotary embeddings rotate pairs of
    coordinates). Its defaults are :func:`build_tiny_model`'s."""
    sizes = {
        "hidden_size": hidden_size,
        "num_layers": num_layers,
        "num_heads": num_heads,
        "num_kv_heads": num_kv_heads,
        "max_position_embeddings": max_position_embeddings,
    }
    if intermediate_size is not None:
        sizes["intermediate_size"] = intermediate_size
    for name, value in sizes.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads}): "
            "each key/value head serves the same number of query heads"
        )
    if hidden_size % num_heads or (hidden_size // num_heads) % 2:
        raise ValueError(
            f"hidden_size ({hidden_size}) must be num_heads ({num_heads}) times an even head width "
            "(rotary embeddings rotate pairs of coordinates)"
        )


def build_tiny_model(
    tokenizer: PreTrainedTokenizerFast,
    *,
    arch: Arch = "qwen2",
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = DEFAULT_NUM_HEADS,
    num_kv_heads: int = DEFAULT_NUM_KV_HEADS,
    intermediate_size: int | None = None,
    max_position_embeddings: int = DEFAULT_MAX_POSITIONS,
    seed: int = 0,
) -> PreTrainedModel:
    """Build a randomly initialised float32 causal LM on CPU that matches ``tokenizer``.

    The vocabulary size is ``len(tokenizer)``; ``intermediate_size`` defaults to
    ``4 * hidden_size``; input and output embeddings are tied. With the defaults and the default
    tokenizer the model has 156,224 parameters.

    Initialisation depends only on the arguments: weights are drawn under ``seed`` inside a forked
    CPU RNG, so the global torch RNG state is the same before and after the call. The model is
    returned in eval mode, as ``from_pretrained`` would return it.

    Raises:
        ValueError: a shape :func:`check_tiny_shape` refuses.
    """
    check_tiny_shape(
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
    )
    endoftext_id = _token_id(tokenizer, ENDOFTEXT)
    im_end_id = _token_id(tokenizer, IM_END)
    common: dict[str, Any] = {
        "vocab_size": len(tokenizer),
        "hidden_size": hidden_size,
        "intermediate_size": intermediate_size if intermediate_size is not None else 4 * hidden_size,
        "num_hidden_layers": num_layers,
        "num_attention_heads": num_heads,
        "num_key_value_heads": num_kv_heads,
        "max_position_embeddings": max_position_embeddings,
        "tie_word_embeddings": True,
        "bos_token_id": endoftext_id,
        "eos_token_id": im_end_id,
        "pad_token_id": endoftext_id,
    }
    config: PretrainedConfig
    if arch == "qwen2":
        config = Qwen2Config(**common)
    elif arch == "llama":
        config = LlamaConfig(**common)
    else:
        raise ValueError(f"unknown arch {arch!r}; expected 'qwen2' or 'llama'")

    # fork_rng restores the CPU generator on exit; building under torch.device("cpu") keeps a
    # caller's default CUDA device from routing initialisation through an unforked generator.
    with torch.random.fork_rng(devices=[]), torch.device("cpu"):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config = GenerationConfig(
        bos_token_id=endoftext_id,
        eos_token_id=[im_end_id, endoftext_id],
        pad_token_id=endoftext_id,
    )
    model.eval()
    return model


def count_parameters(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters())


def save_tiny(path: str | Path, model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast) -> Path:
    """Save ``model`` and ``tokenizer`` into one directory with ``save_pretrained``.

    The directory loads back with ``AutoModelForCausalLM.from_pretrained(path)`` and
    ``AutoTokenizer.from_pretrained(path)``. Returns the directory as a ``Path``.
    """
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _token_id(tokenizer: PreTrainedTokenizerFast, token: str) -> int:
    """Id of a token that must be in the vocabulary."""
    vocab = tokenizer.get_vocab()
    if token not in vocab:
        raise ValueError(f"tokenizer has no {token!r} token")
    return vocab[token]
