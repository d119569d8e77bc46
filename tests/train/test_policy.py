"""load_policy: the tiny model, local directories, clear errors, pad token, options."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from mrlm.train.policy import ModelConfig, ModelNotFoundError, load_policy, looks_local


def test_tiny_builds_in_memory() -> None:
    model, tokenizer = load_policy(ModelConfig(name_or_path="tiny"))
    assert model.config.model_type == "qwen2" and model.dtype == torch.float32
    assert tokenizer.pad_token == "<|endoftext|>" and tokenizer.eos_token == "<|im_end|>"
    assert model.config.vocab_size == len(tokenizer)
    assert not model.training


def test_tiny_options() -> None:
    model, _ = load_policy(
        ModelConfig(
            name_or_path="tiny", dtype="bfloat16", attn_implementation="eager", gradient_checkpointing=True
        )
    )
    assert model.dtype == torch.bfloat16
    assert model.config._attn_implementation == "eager"
    assert any(getattr(m, "gradient_checkpointing", False) for m in model.modules())


def test_loads_a_saved_directory(saved_dir: Path, model: Any) -> None:
    loaded, tokenizer = load_policy(ModelConfig(name_or_path=str(saved_dir)))
    assert tokenizer.pad_token == "<|endoftext|>"
    ids = torch.tensor([[1, 20, 30]])
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=ids).logits, model(input_ids=ids).logits)


def test_missing_local_path_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "model"
    for name in (str(missing), "./not-here", "~/not-here-either"):
        with pytest.raises(FileNotFoundError, match="does not exist") as caught:
            load_policy(ModelConfig(name_or_path=name))
        assert name in str(caught.value)


def test_unknown_hub_id_offline_says_where_it_looked() -> None:
    with pytest.raises(ModelNotFoundError, match=r"locally .* or on the Hugging Face Hub") as caught:
        load_policy(ModelConfig(name_or_path="mrlm-test-org/no-such-model"))
    assert "offline" in str(caught.value)
    assert isinstance(caught.value, OSError)


def test_a_directory_whose_files_load_no_tokenizer_names_it(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    # No tokenizer file at all: said before transformers would build an empty tokenizer.
    with pytest.raises(ModelNotFoundError, match="has no tokenizer") as caught:
        load_policy(ModelConfig(name_or_path=str(tmp_path)))
    assert repr(str(tmp_path)) in str(caught.value)
    # Tokenizer files that name no tokenizer transformers can build.
    (tmp_path / "tokenizer_config.json").write_text("{}")
    with pytest.raises(ModelNotFoundError, match="holds no model that loads: ValueError: ") as caught:
        load_policy(ModelConfig(name_or_path=str(tmp_path)))
    assert repr(str(tmp_path)) in str(caught.value)


def test_looks_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    assert looks_local("./model") and looks_local("../model") and looks_local("/abs/model")
    assert looks_local("~/model") and looks_local("a/b/c") and looks_local("runs/model")
    assert not looks_local("Qwen/Qwen2.5-0.5B-Instruct") and not looks_local("gpt2")


def test_missing_pad_token_falls_back_to_eos(saved_dir: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    copy = Path(shutil.copytree(saved_dir, tmp_path / "nopad"))
    tokenizer = AutoTokenizer.from_pretrained(copy)
    tokenizer.pad_token = None
    tokenizer.save_pretrained(copy)
    with pytest.warns(UserWarning, match="no pad token"):
        _, loaded = load_policy(ModelConfig(name_or_path=str(copy)))
    assert loaded.pad_token == loaded.eos_token == "<|im_end|>"


def test_lora_without_peft_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes any import of peft fail, as on a machine without it.
    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(ImportError, match="pip install peft"):
        load_policy(ModelConfig(name_or_path="tiny", lora_r=8))


def test_lora_trains_only_the_adapters() -> None:
    model, _ = load_policy(ModelConfig(name_or_path="tiny", lora_r=4, lora_target_modules=("q_proj",)))
    trained = [name for name, param in model.named_parameters() if param.requires_grad]
    assert trained and all("lora_" in name and "q_proj" in name for name in trained)


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="dtype"):
        ModelConfig(name_or_path="tiny", dtype="float64")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lora_r"):
        ModelConfig(name_or_path="tiny", lora_r=-1)


def test_a_mistyped_lora_target_is_one_line_naming_the_closest() -> None:
    from mrlm.train.adapters import agent_adapters
    from mrlm.train.cli import RUN_ERRORS

    mistyped = ModelConfig(name_or_path="tiny", lora_r=4, lora_target_modules=("qproj",))
    expected = r"'qproj' \(did you mean 'q_proj'\?\) matches no module .* q_proj, up_proj, v_proj$"
    with pytest.raises(RUN_ERRORS, match=expected):  # the CLI prints these as one line
        load_policy(mistyped)
    # policies="lora" (its base loads with lora_r 0); one typo among good names is refused too
    partly = dataclasses.replace(mistyped, lora_r=0, lora_target_modules=("v_proj", "qproj"))
    with pytest.raises(RUN_ERRORS, match=expected):
        agent_adapters(partly, ["a", "b"], seed=0)


def test_lora_init_is_drawn_from_the_seed() -> None:
    def adapters(seed: int) -> dict[str, torch.Tensor]:
        model, _ = load_policy(ModelConfig(name_or_path="tiny", lora_r=4), seed=seed)
        return {name: value for name, value in model.state_dict().items() if "lora_A" in name}

    state = torch.get_rng_state()
    first = adapters(3)
    assert first and torch.equal(torch.get_rng_state(), state)  # the global generator is untouched
    torch.manual_seed(1234)  # another global state: the same adapters
    torch.testing.assert_close(adapters(3), first, rtol=0, atol=0)
    other = adapters(4)
    assert any(not torch.equal(other[name], value) for name, value in first.items())
