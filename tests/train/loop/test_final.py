"""The final model loads with plain transformers and computes what the trained model computes."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.train.loop.helpers import fixed_batch, lm_step, session_for


def test_save_final_loads_with_transformers(tmp_path: Path, fresh_model, tokenizer) -> None:
    ids = fixed_batch(len(tokenizer))
    with session_for(fresh_model, tmp_path, dist={"mixed_precision": "bf16"}) as session:
        for _ in range(3):
            lm_step(session, ids)
        final = session.save_final(tokenizer)
        again = session.save_final(tokenizer)  # replaces the earlier one
    assert final == again == tmp_path / "final"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]

    loaded = AutoModelForCausalLM.from_pretrained(final)
    assert AutoTokenizer.from_pretrained(final).get_vocab() == tokenizer.get_vocab()
    trained = fresh_model.eval()  # closing the session took the bf16 autocast out of its forward
    with torch.no_grad():
        expected = trained(input_ids=ids).logits
        got = loaded(input_ids=ids).logits
    assert torch.equal(got, expected)
