"""The tiny model: size, determinism, token ids, save/reload and generation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerFast

from mrlm.train.chat_template import ENDOFTEXT, IM_END
from mrlm.train.tiny import (
    MIN_VOCAB_SIZE,
    build_tiny_model,
    build_tiny_tokenizer,
    count_parameters,
    save_tiny,
)

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is 2 + 3?"},
]


def test_default_model_size_and_shape(model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast) -> None:
    assert model.config.model_type == "qwen2"
    assert count_parameters(model) == 156_224
    assert 100_000 <= count_parameters(model) <= 1_000_000
    assert model.get_input_embeddings().num_embeddings == len(tokenizer)
    assert model.config.tie_word_embeddings
    assert next(model.parameters()).dtype == torch.float32
    assert not model.training


def test_llama_arch(tokenizer: PreTrainedTokenizerFast) -> None:
    llama = build_tiny_model(tokenizer, arch="llama", hidden_size=32, num_layers=1, intermediate_size=64)
    assert llama.config.model_type == "llama"
    assert llama.config.intermediate_size == 64
    assert 10_000 <= count_parameters(llama) < 100_000


def test_unknown_arch_is_rejected(tokenizer: PreTrainedTokenizerFast) -> None:
    with pytest.raises(ValueError, match="unknown arch"):
        build_tiny_model(tokenizer, arch="gpt2")  # type: ignore[arg-type]


def test_token_ids_in_config_and_generation_config(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast
) -> None:
    endoftext, im_end = tokenizer.get_vocab()[ENDOFTEXT], tokenizer.get_vocab()[IM_END]
    assert model.config.eos_token_id == tokenizer.eos_token_id == im_end
    assert model.config.pad_token_id == tokenizer.pad_token_id == endoftext
    assert model.config.bos_token_id == endoftext
    assert model.generation_config.eos_token_id == [im_end, endoftext]
    assert model.generation_config.pad_token_id == endoftext


def test_initialisation_is_seeded_and_leaves_global_rng_alone(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast
) -> None:
    state = torch.random.get_rng_state()
    same = build_tiny_model(tokenizer, seed=0)
    other = build_tiny_model(tokenizer, seed=1)
    assert torch.equal(torch.random.get_rng_state(), state)
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, same.state_dict()[name]), name
    assert not torch.equal(model.lm_head.weight, other.lm_head.weight)


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_save_and_reload_is_identical(tmp_path: Path, tokenizer: PreTrainedTokenizerFast, arch: str) -> None:
    model = build_tiny_model(tokenizer, arch=arch)  # type: ignore[arg-type]
    save_tiny(tmp_path, model, tokenizer)
    reloaded_model = AutoModelForCausalLM.from_pretrained(tmp_path)
    reloaded_tokenizer = AutoTokenizer.from_pretrained(tmp_path)

    texts = ["hello world 123", "def f(x):\n    return x ** 2\n", "émoji 👋🏽 <|im_end|>"]
    for text in texts:
        assert reloaded_tokenizer.encode(text) == tokenizer.encode(text)
        assert reloaded_tokenizer.decode(tokenizer.encode(text)) == text
    assert reloaded_tokenizer.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True) == (
        tokenizer.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    )
    assert reloaded_tokenizer.special_tokens_map == tokenizer.special_tokens_map
    assert reloaded_tokenizer.get_vocab() == tokenizer.get_vocab()

    input_ids = torch.tensor([tokenizer.encode(texts[1])])
    with torch.no_grad():
        assert torch.equal(reloaded_model(input_ids).logits, model(input_ids).logits)
    assert reloaded_model.generation_config.eos_token_id == model.generation_config.eos_token_id
    assert reloaded_model.generation_config.pad_token_id == model.generation_config.pad_token_id


def _load(saved_dir: Path) -> tuple[Any, Any]:
    # Any: transformers 5 types generate() so that mypy rejects calling it on Auto-loaded models.
    return AutoModelForCausalLM.from_pretrained(saved_dir), AutoTokenizer.from_pretrained(saved_dir)


def test_generate_from_chat_prompt(saved_dir: Path) -> None:
    model, tokenizer = _load(saved_dir)
    inputs = tokenizer.apply_chat_template(
        MESSAGES, add_generation_prompt=True, return_dict=True, return_tensors="pt"
    )
    output = model.generate(**inputs, max_new_tokens=5, do_sample=False)
    prompt_length = inputs["input_ids"].shape[1]
    assert torch.equal(output[:, :prompt_length], inputs["input_ids"])
    assert 1 <= output.shape[1] - prompt_length <= 5


def test_generation_stops_at_eos_and_pads_after_it(saved_dir: Path) -> None:
    model, tokenizer = _load(saved_dir)
    prompts = ["Hello there, how are", "2 + 2 ="]
    inputs = tokenizer(prompts, return_tensors="pt", padding=True, padding_side="left")
    free = model.generate(**inputs, max_new_tokens=6, do_sample=False)
    prompt_length = inputs["input_ids"].shape[1]

    # Declare the first greedy token of row 0 a stop token: row 0 must stop right there, and every
    # row that stops is padded with <|endoftext|> from then on.
    stop = int(free[0, prompt_length])
    stopped = model.generate(**inputs, max_new_tokens=6, do_sample=False, eos_token_id=stop)
    new = stopped[:, prompt_length:].tolist()
    assert new[0][0] == stop
    for row in new:
        if stop in row:
            after = row[row.index(stop) + 1 :]
            assert all(token == tokenizer.pad_token_id for token in after), row


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ({"hidden_size": 0}, "hidden_size must be at least 1, got 0"),
        ({"num_layers": 0}, "num_layers must be at least 1"),
        ({"intermediate_size": 0}, "intermediate_size must be at least 1"),
        ({"num_heads": 4, "num_kv_heads": 3}, r"num_heads \(4\) must be a multiple of num_kv_heads \(3\)"),
        (
            {"hidden_size": 64, "num_heads": 3, "num_kv_heads": 1},
            r"hidden_size \(64\) must be num_heads \(3\)",
        ),
        ({"hidden_size": 36, "num_heads": 4}, "even head width"),  # heads of 9
    ],
)
def test_a_shape_the_model_cannot_run_is_refused_naming_the_setting(
    tokenizer: PreTrainedTokenizerFast, shape: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build_tiny_model(tokenizer, **shape)


def test_the_command_refuses_a_bad_shape_or_output_before_training_a_tokenizer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mrlm.train.cli import main

    for flags in (["--num-kv-heads", "3"], ["--vocab-size", "10"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["tiny-model", "--output", str(tmp_path / "m"), *flags])
        assert exit_info.value.code == 2
    assert "must be a multiple of num_kv_heads" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()

    (tmp_path / "a-file").write_text("")
    assert main(["tiny-model", "--output", str(tmp_path / "a-file")]) == 1
    assert "OutputDirError: output" in capsys.readouterr().err


def test_the_command_refuses_a_vocab_size_the_corpus_cannot_reach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --vocab-size 100000 gave, with status 0, the few hundred tokens the built-in corpus holds.
    from mrlm.train.cli import main

    # Training stops once no pair repeats: what a huge size gives is every token there is.
    most = len(build_tiny_tokenizer(vocab_size=100_000))
    assert MIN_VOCAB_SIZE < most < 100_000
    for size in (most + 1, 100_000):
        with pytest.raises(SystemExit) as exit_info:
            main(["tiny-model", "--output", str(tmp_path / "m"), "--vocab-size", str(size)])
        assert exit_info.value.code == 2
        assert f"vocab_size must be at most {most}, got {size}" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    # The most it names is reachable, and given.
    assert main(["tiny-model", "--output", str(tmp_path / "m"), "--vocab-size", str(most)]) == 0
    assert f"vocab {most}\n" in capsys.readouterr().out
