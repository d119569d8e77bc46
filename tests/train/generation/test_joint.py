"""Several models of one shape decoded together give each call the completions its own generate gives."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from mrlm.train.generation import HFGenerator, SamplingParams, few_rows
from mrlm.train.generation.joint import JOINT_MAX_ROWS, generate_jointly, joint_reason
from mrlm.train.tiny import build_tiny_model
from tests.train.generation.decodings import started, torch_threads
from tests.train.generation.lively import build_lively_model

PROMPTS = [[[5, 6, 7, 8], [9, 10], [5, 6, 7, 8]], [[11, 12, 13, 14, 15, 16, 17], [18], [19, 20, 21]]]


def _in_turn(
    generators: list[HFGenerator], prompts: list[list[list[int]]], params: list[SamplingParams]
) -> list[list[Any]]:
    return [g.generate(p, q) for g, p, q in zip(generators, prompts, params, strict=True)]


def _assert_same(got: list[list[Any]], want: list[list[Any]]) -> None:
    for got_call, want_call in zip(got, want, strict=True):
        assert [c.token_ids for c in got_call] == [c.token_ids for c in want_call]
        assert [c.finish_reason for c in got_call] == [c.finish_reason for c in want_call]
        for g, w in zip(got_call, want_call, strict=True):
            # Batched products sum in another order: rounding, nothing more.
            torch.testing.assert_close(
                torch.tensor(g.logprobs), torch.tensor(w.logprobs), rtol=1e-4, atol=1e-5
            )


@pytest.mark.parametrize("arch", ["qwen2", "llama"])  # q/k/v biases, and none
@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_joint_decoding_gives_each_call_its_own_completions(
    tokenizer: Any, arch: str, temperature: float
) -> None:
    models = [build_lively_model(tokenizer, seed=seed, arch=arch) for seed in (1, 2, 3)]
    generators = [HFGenerator(m, tokenizer) for m in models]
    prompts = [PROMPTS[0], PROMPTS[1], PROMPTS[1][::-1]]
    params = [SamplingParams(max_new_tokens=24, temperature=temperature, seed=seed) for seed in (4, 5, 6)]
    assert joint_reason(generators, prompts, params) == ""

    joint = generate_jointly(generators, prompts, params)
    in_turn = _in_turn(generators, prompts, params)
    _assert_same(joint, in_turn)
    lengths = {len(c.token_ids) for call in joint for c in call}
    reasons = {c.finish_reason for call in joint for c in call}
    assert len(lengths) > 1 and reasons == {"stop", "length"}  # rows stopped at different steps


def test_unseeded_calls_draw_their_seeds_in_call_order(tokenizer: Any) -> None:
    generators = [HFGenerator(build_lively_model(tokenizer, seed=s), tokenizer) for s in (1, 2)]
    params = [SamplingParams(max_new_tokens=12, temperature=1.0)] * 2
    torch.manual_seed(11)
    joint = generate_jointly(generators, PROMPTS, params)
    after_joint = torch.rand(())
    torch.manual_seed(11)
    in_turn = _in_turn(generators, PROMPTS, params)
    _assert_same(joint, in_turn)
    assert torch.equal(torch.rand(()), after_joint)


def test_training_models_are_switched_back(tokenizer: Any) -> None:
    models = [build_tiny_model(tokenizer, seed=s) for s in (1, 2)]
    models[0].train()
    generators = [HFGenerator(m, tokenizer) for m in models]
    params = [SamplingParams(max_new_tokens=3, seed=1)] * 2
    generate_jointly(generators, PROMPTS, params)
    assert models[0].training and not models[1].training


def test_calls_that_cannot_be_joined_are_named(tokenizer: Any) -> None:
    a, b = build_tiny_model(tokenizer, seed=1), build_tiny_model(tokenizer, seed=2)
    wider = build_tiny_model(tokenizer, seed=2, hidden_size=32, num_heads=2, num_kv_heads=1)
    same = [SamplingParams(max_new_tokens=4, seed=1), SamplingParams(max_new_tokens=4, seed=2)]
    pair = [HFGenerator(a, tokenizer), HFGenerator(b, tokenizer)]

    assert joint_reason(pair[:1], PROMPTS[:1], same[:1]) == "fewer than two calls"
    assert "shapes" in joint_reason([pair[0], HFGenerator(wider, tokenizer)], PROMPTS, same)
    assert "directly" in joint_reason([pair[0], HFGenerator(b, tokenizer, direct=False)], PROMPTS, same)
    assert "numbers of prompts" in joint_reason(pair, [PROMPTS[0], PROMPTS[1][:2]], same)
    assert "no prompts" in joint_reason(pair, [[], []], same)
    assert "one of each per call" in joint_reason(pair, PROMPTS[:1], same)
    assert "one of each per call" in joint_reason(pair, PROMPTS, same[:1])
    many = [[[5, 6]] * (JOINT_MAX_ROWS + 1)] * 2
    assert "side by side" in joint_reason(pair, many, same)
    assert joint_reason(pair, [call[:JOINT_MAX_ROWS] for call in many], same) == ""
    hotter = [same[0], SamplingParams(max_new_tokens=4, seed=2, temperature=0.5)]
    assert "sample differently" in joint_reason(pair, PROMPTS, hotter)
    stops = [same[0], SamplingParams(max_new_tokens=4, seed=2, stop_token_ids=(3,))]
    assert "stop" in joint_reason(pair, PROMPTS, stops)
    wide = [build_tiny_model(tokenizer, seed=s, hidden_size=256, num_heads=2, num_kv_heads=1) for s in (1, 2)]
    assert "side by side" in joint_reason([HFGenerator(m, tokenizer) for m in wide], PROMPTS, same)
    b.config.rope_theta = 500.0
    b.model.rotary_emb.inv_freq.mul_(0.5)
    assert "rotary" in joint_reason(pair, PROMPTS, same)
    with pytest.raises(ValueError, match="rotary"):
        generate_jointly(pair, PROMPTS, same)


def test_models_that_each_decode_fused_go_side_by_side(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two models as wide as the few-rows kernel takes, on one thread each: every step of each is a
    few calls into the kernel, with no per-operation overhead left for a joint step to share."""
    models = [build_tiny_model(tokenizer, seed=s, hidden_size=few_rows.MIN_IN_FEATURES) for s in (1, 2)]
    pair = [HFGenerator(m, tokenizer) for m in models]
    same = [SamplingParams(max_new_tokens=4, seed=1), SamplingParams(max_new_tokens=4, seed=2)]
    with torch_threads(2):  # one each, side by side
        assert "fused" in joint_reason(pair, PROMPTS, same)
        torch.set_num_threads(1)  # as each runs then: the decoding fuses, as promised
        for model in models:
            assert started(model, PROMPTS[0][0], rows=len(PROMPTS[0]), budget=2).fused is not None
        assert started(models[0], PROMPTS[0][0], rows=few_rows.MAX_ROWS + 1, budget=2).fused is None
        more = [[[5, 6]] * (few_rows.MAX_ROWS + 1)] * 2  # more rows than the kernel takes
        assert joint_reason(pair, more, same) == ""
        torch.set_num_threads(4)  # two each: the kernel takes up to TWO_THREAD_ROWS rows
        assert "fused" in joint_reason(pair, [call[: few_rows.TWO_THREAD_ROWS] for call in more], same)
        assert joint_reason(pair, [call[: few_rows.TWO_THREAD_ROWS + 1] for call in more], same) == ""
        torch.set_num_threads(2)
        monkeypatch.setattr(few_rows, "kernel_rows", lambda weight, threads=None: 0)  # no compiler
        assert joint_reason(pair, PROMPTS, same) == ""
