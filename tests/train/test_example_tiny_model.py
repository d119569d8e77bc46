"""examples/build_tiny_model.py, run in-process (tests/test_examples.py also runs it as a script)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "build_tiny_model.py"


def test_example_saves_reloads_and_replies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("build_tiny_model_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    # Dataclasses resolve their annotations through sys.modules, so the module must be there.
    monkeypatch.setitem(sys.modules, spec.name, example)
    spec.loader.exec_module(example)

    example.main(example.Args(output=tmp_path / "tiny", max_new_tokens=4))
    out = capsys.readouterr().out
    assert "156,224-parameter model" in out
    assert "<|im_start|>assistant\n" in out
    assert "reply (" in out
    assert AutoModelForCausalLM.from_pretrained(tmp_path / "tiny").config.model_type == "qwen2"
