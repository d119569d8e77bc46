"""DirectModel: the same completions and log-probs as the model's own forward, shared prompts, refusals."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from mrlm.train.generation import HFGenerator, SamplingParams, direct, few_rows, token_logprobs
from mrlm.train.generation.direct import (
    PACK_MIN_HIDDEN,
    PACK_MIN_ROWS,
    PACK_MIN_TOKENS,
    DirectModel,
    _Projection,
    direct_model_or_reason,
    packs_weights,
)
from mrlm.train.generation.memory import available_cpu_memory
from mrlm.train.tiny import build_tiny_model
from tests.train.generation.decodings import assert_decodes_like_forward, started, torch_threads
from tests.train.generation.lively import build_lively_model

TEXTS = ["Hello there", "What is 2 + 2?", "a", "The quick brown fox jumps over the lazy dog", "x = 3"]


@pytest.fixture(scope="module", params=["qwen2", "llama"])
def arch_model(request: pytest.FixtureRequest, tokenizer: Any) -> Any:
    """A lively model per architecture (qwen2 has q/k/v biases, llama has none)."""
    return build_lively_model(tokenizer, arch=request.param, seed=1)


@pytest.fixture(scope="module")
def prompts(tokenizer: Any) -> list[list[int]]:
    ids = [tokenizer.encode(text) for text in TEXTS]
    # Repeats, as a GRPO group has: they share one prefill.
    return [ids[0], ids[1], ids[0], ids[2], ids[3], ids[1], ids[4], ids[0]]


def test_the_tiny_architectures_are_supported(arch_model: Any) -> None:
    assert isinstance(direct_model_or_reason(arch_model), DirectModel)
    assert isinstance(direct_model_or_reason(arch_model, training=True), DirectModel)


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(max_new_tokens=24, temperature=0.0),
        SamplingParams(max_new_tokens=24, temperature=1.0, seed=3),
        SamplingParams(max_new_tokens=24, temperature=0.7, top_p=0.9, top_k=50, seed=4),
        SamplingParams(max_new_tokens=24, ignore_stop=True, seed=5),
    ],
    ids=["greedy", "sampled", "truncated", "full-length"],
)
def test_decoding_matches_the_model_forward(
    arch_model: Any, tokenizer: Any, prompts: list[list[int]], params: SamplingParams
) -> None:
    assert_decodes_like_forward(arch_model, tokenizer, prompts, params)


def test_rows_that_stop_early_leave_the_batch(
    arch_model: Any, tokenizer: Any, prompts: list[list[int]]
) -> None:
    direct = assert_decodes_like_forward(
        arch_model, tokenizer, prompts, _stopping(arch_model, tokenizer, prompts)
    )
    assert len({len(c.token_ids) for c in direct}) > 2
    assert {c.finish_reason for c in direct} == {"stop", "length"}


def _stopping(
    model: Any, tokenizer: Any, prompts: list[list[int]], budget: int = 20, seed: int = 6
) -> SamplingParams:
    """Sampling whose stop tokens some rows produce early and others never: rows end at different steps."""
    free = HFGenerator(model, tokenizer).generate(
        prompts, SamplingParams(max_new_tokens=budget, seed=seed, ignore_stop=True)
    )
    stops = (free[0].token_ids[3], free[3].token_ids[9])
    return SamplingParams(max_new_tokens=budget, seed=seed, stop_token_ids=stops)


def test_repeated_prompts_decode_like_single_ones(
    arch_model: Any, tokenizer: Any, prompts: list[list[int]]
) -> None:
    params = SamplingParams(max_new_tokens=16, temperature=0.0)
    batch = HFGenerator(arch_model, tokenizer).generate(prompts, params)
    alone = HFGenerator(arch_model, tokenizer).generate([prompts[0]], params)[0]
    assert batch[0].token_ids == batch[2].token_ids == batch[7].token_ids == alone.token_ids


def _scored_batch(vocab: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows with shared and distinct prompts of several lengths, right padding, and a row scoring nothing."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab, (7, 15), generator=generator)
    ids[1, :5] = ids[2, :5] = ids[0, :5]  # a group of three sharing a 5-token prompt
    ids[4, :7] = ids[3, :7]  # a pair sharing a longer prompt
    attention = torch.ones_like(ids)
    attention[2, 12:] = 0
    attention[5, 9:] = 0
    mask = torch.zeros(ids.shape)
    mask[:3, 5:] = 1
    mask[3:5, 7:] = 1
    mask[5, 6:] = 1  # row 6 scores nothing
    ids = ids.masked_fill(attention == 0, 0)
    return ids, attention, mask * attention


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_and_gradients_match_the_model_forward(
    arch_model: Any, tokenizer: Any, temperature: float
) -> None:
    ids, attention, mask = _scored_batch(len(tokenizer))
    weights = torch.linspace(-1.0, 1.0, ids.shape[1])  # an arbitrary loss over the log-probs
    results = []
    arch_model.train()
    try:
        for direct in (True, False):
            arch_model.zero_grad()
            logp = token_logprobs(arch_model, ids, attention, mask, temperature, direct=direct)
            (logp * weights).sum().backward()
            grads = [p.grad.clone() for p in arch_model.parameters() if p.grad is not None]
            results.append((logp.detach(), grads))
    finally:
        arch_model.zero_grad()
        arch_model.eval()
    (ours, our_grads), (theirs, their_grads) = results
    assert bool((ours[mask == 0] == 0).all()) and bool((ours[mask == 1] < 0).all())
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)  # relative: log-probs reach -12
    assert len(our_grads) == len(their_grads)
    for mine, reference in zip(our_grads, their_grads, strict=True):
        torch.testing.assert_close(mine, reference, atol=1e-4, rtol=1e-4)


def test_left_padded_rows_and_nothing_scored(arch_model: Any) -> None:
    ids = torch.tensor([[0, 0, 5, 40, 41, 42], [7, 8, 9, 10, 11, 12], [0, 0, 5, 40, 41, 42]])
    attention = (ids != 0).long()
    mask = torch.tensor([[0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1]])
    with torch.no_grad():
        ours = token_logprobs(arch_model, ids, attention, mask)
        theirs = token_logprobs(arch_model, ids, attention, mask, direct=False)
        nothing = token_logprobs(arch_model, ids, attention, torch.zeros_like(mask))
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)  # relative: log-probs reach -12
    assert bool((nothing == 0).all())


def test_refusals_name_the_reason(tokenizer: Any) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    other = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=32, n_layer=1, n_head=2, n_positions=32))
    assert "model type 'gpt2'" in str(direct_model_or_reason(other))

    model = build_lively_model(tokenizer)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert "autocast" in str(direct_model_or_reason(model))

    half = build_lively_model(tokenizer).to(torch.bfloat16)
    assert "float32" in str(direct_model_or_reason(half))

    class Adapter(torch.nn.Linear):
        pass

    adapted = build_lively_model(tokenizer)
    old = adapted.model.layers[0].self_attn.q_proj
    adapted.model.layers[0].self_attn.q_proj = Adapter(old.in_features, old.out_features)
    assert "plain torch.nn.Linear" in str(direct_model_or_reason(adapted))

    checkpointed = build_lively_model(tokenizer)
    checkpointed.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    checkpointed.train()
    assert isinstance(direct_model_or_reason(checkpointed), DirectModel)  # decoding does not care
    assert "checkpointing" in str(direct_model_or_reason(checkpointed, training=True))


def test_follows_weight_updates(tokenizer: Any, prompts: list[list[int]]) -> None:
    model = build_lively_model(tokenizer, seed=2)
    generator = HFGenerator(model, tokenizer)
    params = SamplingParams(max_new_tokens=8, temperature=0.0)
    before = generator.generate(prompts[:3], params)
    with torch.no_grad():
        model.lm_head.weight.mul_(-1.0)  # tied to the embeddings: every logit changes
    after = generator.generate(prompts[:3], params)
    reference = HFGenerator(model, tokenizer, direct=False).generate(prompts[:3], params)
    assert [c.token_ids for c in after] == [c.token_ids for c in reference]
    assert [c.token_ids for c in after] != [c.token_ids for c in before]


@pytest.fixture(params=["fused", "kernel", "mkl"])
def few_row_products(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Decoding's few-row products on the few-rows kernel (one torch thread, as each agent's model
    decoding side by side has), with each layer one call to its decode layer ("fused") or torch's
    operations between the products ("kernel"), or on torch's products (as without a compiler)."""
    if request.param == "mkl":
        monkeypatch.setattr(few_rows, "kernel_rows", lambda weight, threads=None: 0)
    if request.param == "kernel":
        monkeypatch.setattr(direct, "fused_layers", lambda *args: None)
    with torch_threads(1):
        yield str(request.param)


@pytest.mark.parametrize("with_bias", [False, True])
def test_a_projection_of_few_rows_computes_x_w_transposed_plus_bias(
    with_bias: bool, few_row_products: str
) -> None:
    generator = torch.Generator().manual_seed(3)
    width = few_rows.MIN_IN_FEATURES  # the kernel's narrowest
    weight = torch.randn(48, width, generator=generator)
    bias = torch.randn(48, generator=generator) if with_bias else None
    with torch.no_grad():  # as decoding runs
        projection = _Projection(weight, bias, few_rows=True)
    assert (projection.kernel is not None) == (few_row_products != "mkl")
    # A decoding step's rows, more rows than the kernel takes, a prefill's rows and columns.
    for shape in [(5, width), (few_rows.MAX_ROWS + 1, width), (2, 7, width)]:
        x = torch.randn(*shape, generator=generator)
        expected = x @ weight.t() + (bias if bias is not None else 0.0)
        out = projection(x)
        assert out.shape == expected.shape and out.is_contiguous()
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_decoding_with_few_row_products_matches_the_models_forward(
    tokenizer: Any, prompts: list[list[int]], few_row_products: str
) -> None:
    model = build_lively_model(tokenizer, seed=1, hidden_size=few_rows.MIN_IN_FEATURES)
    state = started(model, prompts[0], rows=2, budget=4)
    qkv = state.weights.layers[0].qkv
    assert isinstance(qkv, _Projection) and qkv.few_rows  # on CPU
    assert (qkv.kernel is not None) == (few_row_products != "mkl")
    assert (state.fused is not None) == (few_row_products == "fused")

    # Rows that stop early leave the batch: fewer rows from then on.
    direct = assert_decodes_like_forward(model, tokenizer, prompts, _stopping(model, tokenizer, prompts))
    assert {c.finish_reason for c in direct} == {"stop", "length"}


def test_fused_decoding_with_every_bias_and_heads_past_the_lanes_matches_the_models_forward(
    tokenizer: Any, prompts: list[list[int]]
) -> None:
    """A Llama with biases on every projection and heads of 24 (a tail past the kernel's 16 lanes),
    three query heads per key/value head."""
    model = _llama(
        tokenizer,
        hidden_size=144,
        intermediate_size=200,
        heads=6,
        kv_heads=2,
        attention_bias=True,
        mlp_bias=True,
    )
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(4)
        for name, parameter in model.named_parameters():
            if "norm" not in name:  # lively replies, and biases that matter
                parameter.normal_(0.0, 0.3)
    with torch_threads(1):
        assert started(model, prompts[0], rows=2, budget=4).fused is not None
        assert_decodes_like_forward(
            model, tokenizer, prompts, SamplingParams(max_new_tokens=16, seed=8, ignore_stop=True)
        )


def _llama(
    tokenizer: Any, *, hidden_size: int, intermediate_size: int, heads: int, kv_heads: int, **config: Any
) -> Any:
    """A 2-layer Llama of these shapes (and ``config``'s options), initialised from seed 4 (the global
    RNG left as it was), in eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(4)
        return LlamaForCausalLM(
            LlamaConfig(
                vocab_size=len(tokenizer),
                hidden_size=hidden_size,
                intermediate_size=intermediate_size,
                num_hidden_layers=2,
                num_attention_heads=heads,
                num_key_value_heads=kv_heads,
                tie_word_embeddings=True,
                pad_token_id=tokenizer.pad_token_id,
                **config,
            )
        ).eval()


def test_fused_decoding_of_layers_of_different_widths_matches_the_models_forward(
    tokenizer: Any, prompts: list[list[int]]
) -> None:
    """A second layer whose MLP is five times wider than the first's (as after pruning the first):
    the scratch must serve the widest layer."""
    model = build_lively_model(tokenizer, seed=5, hidden_size=128, arch="llama")
    mlp = model.model.layers[1].mlp
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        mlp.gate_proj = torch.nn.Linear(128, 2560, bias=False)
        mlp.up_proj = torch.nn.Linear(128, 2560, bias=False)
        mlp.down_proj = torch.nn.Linear(2560, 128, bias=False)
    with torch_threads(1):
        assert started(model, prompts[0], rows=8, budget=6).fused is not None
        assert_decodes_like_forward(
            model, tokenizer, prompts, SamplingParams(max_new_tokens=12, seed=9, ignore_stop=True)
        )


def test_a_decoding_step_refuses_a_token_count_other_than_its_rows(
    tokenizer: Any, prompts: list[list[int]], few_row_products: str
) -> None:
    model = build_lively_model(tokenizer, seed=1, hidden_size=few_rows.MIN_IN_FEATURES)
    prompt = torch.tensor([prompts[0]])
    with torch.inference_mode():
        decoding, _ = DirectModel(model).start(
            prompt, torch.ones_like(prompt), torch.zeros(3, dtype=torch.long), 4
        )
        decoding.keep(torch.tensor([0]))
        with pytest.raises(ValueError, match="4 tokens for the 1 rows"):
            decoding.step(torch.zeros(4, dtype=torch.long))
        assert decoding.step(torch.zeros(1, dtype=torch.long)).shape[0] == 1


def test_a_norm_weight_that_is_a_strided_view_keeps_torchs_operations(
    tokenizer: Any, prompts: list[list[int]]
) -> None:
    model = build_lively_model(tokenizer, seed=1, hidden_size=few_rows.MIN_IN_FEATURES)
    norm = model.model.layers[0].input_layernorm
    norm.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, 256)[::2])  # the C reads with stride 1
    with torch_threads(1):
        assert started(model, prompts[0], rows=2, budget=4).fused is None
        assert not direct.decodes_fused(DirectModel(model), 2, threads=1)
        assert_decodes_like_forward(
            model, tokenizer, prompts, SamplingParams(max_new_tokens=12, seed=9, ignore_stop=True)
        )


def test_a_parameter_given_new_storage_while_decoding_is_read_where_the_decoding_started(
    tokenizer: Any, prompts: list[list[int]]
) -> None:
    model = build_lively_model(tokenizer, seed=1, hidden_size=few_rows.MIN_IN_FEATURES)
    runner = DirectModel(model)
    prompt = torch.tensor([prompts[0]])
    tokens = torch.tensor([5, 6])
    with torch_threads(1), torch.inference_mode():
        expected, _ = runner.start(prompt, torch.ones_like(prompt), torch.zeros(2, dtype=torch.long), 4)
        expected_logits = expected.step(tokens)
        decoding, _ = runner.start(prompt, torch.ones_like(prompt), torch.zeros(2, dtype=torch.long), 4)
        assert decoding.state is not None and decoding.state.fused is not None
        for layer in model.model.layers:  # the same values in new storage; the old one unreferenced
            for linear in (layer.mlp.down_proj, layer.self_attn.o_proj):
                linear.weight.data = linear.weight.data.clone()
            layer.post_attention_layernorm.weight.data = layer.post_attention_layernorm.weight.data.clone()
        gc.collect()
        torch.randn(1 << 20).fill_(float("nan"))  # likely reuses the freed memory
        torch.testing.assert_close(decoding.step(tokens), expected_logits)


@pytest.mark.parametrize("with_bias", [False, True])
def test_a_packed_projection_computes_x_w_transposed_plus_bias(with_bias: bool) -> None:
    generator = torch.Generator().manual_seed(4)
    weight = torch.randn(96, 64, generator=generator)
    bias = torch.randn(96, generator=generator) if with_bias else None
    projection = _Projection(weight, bias, few_rows=True, packed_rows=8)
    assert projection.packed is not None
    for shape in [(8, 64), (3, 64), (1, 64), (2, 7, 64)]:  # its rows, fewer once rows stop; a prefill
        x = torch.randn(*shape, generator=generator)
        expected = x @ weight.t() + (bias if bias is not None else 0.0)
        torch.testing.assert_close(projection(x), expected, rtol=1e-5, atol=1e-5)


def test_available_memory_is_read_from_meminfo(tmp_path: Any) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   1500000 kB\n")
    assert available_cpu_memory(str(meminfo)) == 1500000 * 1024
    meminfo.write_text("MemTotal:       24000000 kB\n")  # an old kernel's
    assert available_cpu_memory(str(meminfo)) is None
    assert available_cpu_memory(str(tmp_path / "missing")) is None


def test_packing_is_chosen_only_where_it_pays(tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    wide = build_tiny_model(tokenizer, hidden_size=PACK_MIN_HIDDEN, num_layers=1)
    rows = few_rows.MAX_ROWS + 1  # more than the few-rows kernel takes
    with torch.no_grad(), torch_threads(1):
        assert packs_weights(wide, rows, PACK_MIN_TOKENS)  # x86 builds of torch have oneDNN
        assert not packs_weights(wide, few_rows.MAX_ROWS, PACK_MIN_TOKENS)  # the kernel's
    with torch.no_grad(), torch_threads(2):
        assert packs_weights(wide, PACK_MIN_ROWS, PACK_MIN_TOKENS)  # on two threads, MKL's
    assert packs_weights(wide, PACK_MIN_ROWS, PACK_MIN_TOKENS)  # no kernel while gradients are recorded
    monkeypatch.setattr(few_rows, "kernel_rows", lambda weight, threads=None: 0)  # as without a compiler
    assert packs_weights(wide, PACK_MIN_ROWS, PACK_MIN_TOKENS)
    assert not packs_weights(wide, PACK_MIN_ROWS - 1, PACK_MIN_TOKENS)
    assert not packs_weights(wide, rows, PACK_MIN_TOKENS - 1)
    narrow = build_tiny_model(tokenizer, hidden_size=PACK_MIN_HIDDEN // 2, num_layers=1)
    assert not packs_weights(narrow, rows, PACK_MIN_TOKENS)
    halved = build_tiny_model(tokenizer, hidden_size=PACK_MIN_HIDDEN, num_layers=1).bfloat16()
    assert not packs_weights(halved, rows, PACK_MIN_TOKENS)
    size = sum(p.numel() * p.element_size() for p in wide.parameters())
    monkeypatch.setattr(direct, "available_cpu_memory", lambda: 4 * size - 1)  # the copy is too big
    assert not packs_weights(wide, rows, PACK_MIN_TOKENS)
    monkeypatch.setattr(direct, "available_cpu_memory", lambda: None)  # unknown: no risk taken
    assert not packs_weights(wide, rows, PACK_MIN_TOKENS)
    monkeypatch.setattr(direct, "available_cpu_memory", lambda: 4 * size)
    assert packs_weights(wide, rows, PACK_MIN_TOKENS)


def test_decoding_on_packed_weights_matches_the_models_forward(tokenizer: Any) -> None:
    model = build_lively_model(tokenizer, seed=2, std=0.1, hidden_size=PACK_MIN_HIDDEN, num_layers=2)
    ids = [tokenizer.encode(text) for text in TEXTS]
    prompts = [ids[i % len(ids)] for i in range(few_rows.MAX_ROWS + 2)]  # more rows than the kernel takes
    state = started(model, prompts[0], rows=len(prompts), budget=PACK_MIN_TOKENS)
    for projection in (state.weights.layers[1].down, state.weights.lm_head):
        assert isinstance(projection, _Projection) and projection.packed is not None

    assert_decodes_like_forward(
        model, tokenizer, prompts, SamplingParams(max_new_tokens=24, seed=7, ignore_stop=True)
    )
    # Rows that stop early leave the batch: fewer rows on the packed weights from then on.
    stopping = _stopping(model, tokenizer, prompts, budget=24, seed=7)
    packed = assert_decodes_like_forward(model, tokenizer, prompts, stopping)
    assert {c.finish_reason for c in packed} == {"stop", "length"}


@pytest.mark.parametrize("layout", ["as built", "q weight transposed", "o bias strided", "norm strided"])
def test_decodes_fused_foretells_what_a_decoding_does(
    tokenizer: Any, prompts: list[list[int]], layout: str
) -> None:
    model = _llama(
        tokenizer, hidden_size=128, intermediate_size=256, heads=4, kv_heads=2, attention_bias=True
    )
    attention = model.model.layers[1].self_attn
    if layout == "q weight transposed":  # q, k and v are copied into one weight: still fused
        attention.q_proj.weight = torch.nn.Parameter(attention.q_proj.weight.detach().t().contiguous().t())
    elif layout == "o bias strided":
        attention.o_proj.bias = torch.nn.Parameter(torch.zeros(256)[::2])
    elif layout == "norm strided":
        model.model.layers[1].input_layernorm.weight = torch.nn.Parameter(torch.ones(256)[::2])
    with torch_threads(1):
        for rows in (1, few_rows.MAX_ROWS, few_rows.MAX_ROWS + 1):
            fused = started(model, prompts[0], rows=rows, budget=2).fused is not None
            assert direct.decodes_fused(DirectModel(model), rows, threads=1) == fused
            assert fused == (layout in ("as built", "q weight transposed") and rows <= few_rows.MAX_ROWS)
