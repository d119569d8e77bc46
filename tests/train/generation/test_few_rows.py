"""The few-rows kernel: x W^T + b against float64 products for every CPU version it holds, its build
and cache, the arguments it refuses, and when decoding uses it."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
import torch

from mrlm.train.generation import few_rows
from mrlm.train.generation.few_rows import MAX_ROWS, FewRowsKernel, build

ON_X86_LINUX = (platform.system(), platform.machine()) == ("Linux", "x86_64")


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def _versions() -> list[tuple[str, list[str]]]:
    """The library as shipped (the CPU picks its version) and each version alone that this CPU runs."""
    versions: list[tuple[str, list[str]]] = [("as shipped", [])]
    if ON_X86_LINUX:
        flags = _cpu_flags()
        versions.append(("x86-64 baseline", ["-DMRLM_ONE_VERSION", "-march=x86-64"]))
        if {"avx2", "fma"} <= flags:
            versions.append(("AVX2", ["-DMRLM_ONE_VERSION", "-march=x86-64-v3"]))
        if "avx512f" in flags:
            versions.append(("AVX-512", ["-DMRLM_ONE_VERSION", "-mavx512f", "-mfma"]))
    return versions


@pytest.fixture(scope="module", params=_versions(), ids=lambda version: version[0])
def kernel(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> FewRowsKernel:
    _, flags = request.param
    return FewRowsKernel(build(cache_dir=tmp_path_factory.mktemp("kernels"), extra_flags=flags))


@pytest.mark.parametrize(("n", "k"), [(48, 32), (37, 100), (5, 7), (130, 512), (3, 1)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_the_product_is_x_w_transposed_plus_bias(
    kernel: FewRowsKernel, n: int, k: int, with_bias: bool
) -> None:
    # k of 100 and 7 leave a tail that the 16-lane loop does not cover.
    generator = torch.Generator().manual_seed(n * k)
    weight = torch.randn(n, k, generator=generator)
    bias = torch.randn(n, generator=generator) if with_bias else None
    for rows in range(1, MAX_ROWS + 1):
        x = torch.randn(rows, k, generator=generator)
        expected = x.double() @ weight.double().t() + (0.0 if bias is None else bias.double())
        out = kernel(x, weight, bias)
        assert out.shape == (rows, n) and out.dtype == torch.float32
        torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5 * k**0.5)


def test_views_are_read_as_their_values(kernel: FewRowsKernel) -> None:
    generator = torch.Generator().manual_seed(5)
    weight = torch.randn(64, 40, generator=generator).t()  # [40, 64], not contiguous
    x = torch.randn(64, 6, generator=generator).t()  # [6, 64]
    torch.testing.assert_close(kernel(x, weight), x @ weight.t(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    ("x", "weight", "bias", "message"),
    [
        (torch.ones(MAX_ROWS + 1, 16), torch.ones(4, 16), None, "1 to 8 rows"),
        (torch.ones(0, 16), torch.ones(4, 16), None, "1 to 8 rows"),
        (torch.ones(2, 3, 16), torch.ones(4, 16), None, "1 to 8 rows"),
        (torch.ones(2, 16), torch.ones(4, 15), None, "do not match"),
        (torch.ones(2, 16), torch.ones(4, 16), torch.ones(5), "do not match"),
        (torch.ones(2, 16, dtype=torch.bfloat16), torch.ones(4, 16), None, "x must be float32"),
        (torch.ones(2, 16), torch.ones(4, 16, dtype=torch.float64), None, "weight must be float32"),
        (torch.ones(2, 16), torch.tensor(1.0), None, "do not match"),
        (torch.ones(2, 16), torch.ones(4, 16, requires_grad=True), None, "not differentiable"),
    ],
)
def test_arguments_it_does_not_take_are_refused(
    kernel: FewRowsKernel, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        kernel(x, weight, bias)


def test_a_build_is_cached_under_its_sources_hash(tmp_path: Path) -> None:
    first = build(cache_dir=tmp_path)
    stamp = first.stat().st_mtime_ns
    assert build(cache_dir=tmp_path) == first and first.stat().st_mtime_ns == stamp  # not rebuilt
    other = build(cache_dir=tmp_path, extra_flags=["-DMRLM_ONE_VERSION"])
    assert other != first  # other flags, another library
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        [first.name, other.name]
    )  # no leftovers


def test_an_unwritable_cache_builds_in_a_private_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the directory would be")
    library = build(cache_dir=blocked)
    assert library.parent == tmp_path / "tmp" / f"mrlm-kernel-{os.getuid()}"
    assert library.parent.stat().st_mode & 0o777 == 0o700
    stamp = library.stat().st_mtime_ns
    assert build(cache_dir=blocked) == library and library.stat().st_mtime_ns == stamp  # the next process's
    torch.testing.assert_close(
        FewRowsKernel(library)(torch.ones(1, 4), torch.ones(2, 4)), torch.full((1, 2), 4.0)
    )
    # Someone else's directory of that name (here: open to all) is not used.
    library.parent.chmod(0o777)
    elsewhere = build(cache_dir=blocked)
    assert elsewhere.parent != library.parent and elsewhere.parent.parent == tmp_path / "tmp"


def test_a_cached_build_needs_no_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    library = build(cache_dir=tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CC", raising=False)
    assert build(cache_dir=tmp_path) == library


def test_cc_is_a_command_with_its_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiler = few_rows._find_compiler()
    wrapper = tmp_path / "wrapper"  # like ccache: runs the compiler it is given
    wrapper.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "argv"}\nexec "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", f"{wrapper} {compiler[0]} -DMRLM_MARK")
    library = build(cache_dir=tmp_path / "cache")
    assert (tmp_path / "argv").read_text().startswith(f"{compiler[0]} -DMRLM_MARK -O3 ")
    torch.testing.assert_close(
        FewRowsKernel(library)(torch.ones(1, 4), torch.ones(2, 4)), torch.full((1, 2), 4.0)
    )


def test_a_failed_or_impossible_build_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match=r"could not build few_rows\.c"):
        build(cache_dir=tmp_path, extra_flags=["-DMRLM_ONE_VERSION", "--no-such-flag"])
    assert list(tmp_path.iterdir()) == []  # the partial output is gone
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(RuntimeError, match="no C compiler found"):
        build(cache_dir=tmp_path)


@pytest.fixture
def fresh_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """few_rows_kernel() as in a new process: not tried yet."""
    monkeypatch.setattr(few_rows, "_tried", False)
    monkeypatch.setattr(few_rows, "_loaded", None)
    monkeypatch.setattr(few_rows, "_reason", None)


@pytest.mark.parametrize("damage", ["cut short", "another library"])
def test_a_damaged_cached_build_is_built_again(
    fresh_loader: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    library = build()
    assert library.parent == tmp_path / "mrlm"
    if damage == "cut short":
        library.write_bytes(library.read_bytes()[:100])
    else:
        other = tmp_path / "other.c"
        other.write_text("int something_else(void) { return 1; }\n")
        subprocess.run(
            [*few_rows._find_compiler(), "-shared", "-fPIC", "-o", str(library), str(other)], check=True
        )
    with pytest.raises(OSError, match=re.escape(library.name)):
        FewRowsKernel(library)
    kernel = few_rows.few_rows_kernel()
    assert kernel is not None and few_rows.unavailable_reason() is None
    torch.testing.assert_close(kernel(torch.ones(1, 4), torch.ones(2, 4)), torch.full((1, 2), 4.0))


def test_the_output_is_on_the_cpu_whatever_the_default_device(kernel: FewRowsKernel) -> None:
    x, weight = torch.ones(2, 4), torch.ones(3, 4)
    with torch.device("meta"):
        out = kernel(x, weight)
    torch.testing.assert_close(out, torch.full((2, 3), 4.0))


def test_the_loader_opts_out_or_reports_a_failed_build(
    fresh_loader: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(few_rows.OPT_OUT, "0")
    assert few_rows.few_rows_kernel() is None and few_rows.unavailable_reason() == "MRLM_FEW_ROWS_KERNEL=0"
    with torch.no_grad():
        assert few_rows.kernel_rows(torch.ones(2, few_rows.MIN_IN_FEATURES)) == 0

    monkeypatch.setattr(few_rows, "_tried", False)
    monkeypatch.delenv(few_rows.OPT_OUT)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no compiler
    monkeypatch.delenv("CC", raising=False)
    expected = "no C compiler found" if ON_X86_LINUX else "x86-64 Linux only"
    assert few_rows.few_rows_kernel() is None and expected in str(few_rows.unavailable_reason())


@pytest.mark.skipif(not ON_X86_LINUX, reason="the kernel is used on x86-64 Linux only")
def test_decoding_uses_it_for_wide_float32_weights_without_gradients_on_few_threads(
    fresh_loader: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # built afresh, into its own cache
    weight = torch.ones(4, few_rows.MIN_IN_FEATURES)
    threads = torch.get_num_threads()
    try:
        with torch.no_grad():
            torch.set_num_threads(1)
            assert few_rows.kernel_rows(weight) == MAX_ROWS
            assert isinstance(few_rows.few_rows_kernel(), FewRowsKernel)
            assert few_rows.kernel_rows(weight.bfloat16()) == 0
            assert few_rows.kernel_rows(weight[:, 1:]) == 0  # too narrow
            torch.set_num_threads(2)
            assert few_rows.kernel_rows(weight) == few_rows.TWO_THREAD_ROWS
            torch.set_num_threads(3)
            assert few_rows.kernel_rows(weight) == 0
        torch.set_num_threads(1)
        assert few_rows.kernel_rows(weight) == 0  # gradients recorded: the product must be torch's
    finally:
        torch.set_num_threads(threads)
    assert [path.suffix for path in (tmp_path / "mrlm").iterdir()] == [".so"]


def _decode_layer(
    heads: int,
    kv_heads: int,
    head_dim: int,
    hidden: int,
    intermediate: int,
    eps: float = 1e-6,
    weights: dict[str, torch.Tensor | None] | None = None,
) -> few_rows.DecodeLayer:
    """The C description of a layer of these shapes over ``weights`` (by the struct's field names;
    the caller keeps them alive; those left out are null)."""
    pointers = {name: None if t is None else t.data_ptr() for name, t in (weights or {}).items()}
    return few_rows.DecodeLayer(
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=intermediate,
        eps=eps,
        **pointers,
    )


def _reference_layer_step(
    hidden: torch.Tensor,
    weights: dict[str, torch.Tensor | None],
    rotation: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    slot: int,
    heads: int,
    eps: float,
) -> torch.Tensor:
    """One decoding step through a pre-norm layer, in float64 torch, one head at a time; writes the
    step's keys and values into ``keys`` and ``values`` (float64 copies of the cache)."""
    rows, kv_heads, d = keys.shape[0], keys.shape[1], keys.shape[3]

    def linear(x: torch.Tensor, name: str) -> torch.Tensor:
        bias = weights[f"{name}_bias"]
        weight = weights[name]
        assert weight is not None
        return x @ weight.double().t() + (0.0 if bias is None else bias.double())

    def norm(x: torch.Tensor, name: str) -> torch.Tensor:
        weight = weights[name]
        assert weight is not None
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.double()

    qkv = linear(norm(hidden, "input_norm"), "qkv").view(rows, heads + 2 * kv_heads, d // 2, 2)
    cos, sin = rotation[:, None, :, 0].double(), rotation[:, None, :, 1].double()
    a, b = qkv[:, : heads + kv_heads, :, 0], qkv[:, : heads + kv_heads, :, 1]
    rotated = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
    q, k = rotated[:, :heads], rotated[:, heads:]
    keys[:, :, slot] = k
    values[:, :, slot] = qkv[:, heads + kv_heads :].flatten(-2)
    attended = torch.empty(rows, heads, d, dtype=torch.float64)
    for h in range(heads):
        g = h // (heads // kv_heads)
        scores = torch.einsum("rd,rsd->rs", q[:, h], keys[:, g, : slot + 1]) / d**0.5 + mask[:, : slot + 1]
        attended[:, h] = torch.einsum("rs,rsd->rd", scores.softmax(-1), values[:, g, : slot + 1])
    hidden = hidden + linear(attended.flatten(1), "o")
    normed = norm(hidden, "post_norm")
    gated = torch.nn.functional.silu(linear(normed, "gate")) * linear(normed, "up")
    return hidden + linear(gated, "down")


@pytest.mark.parametrize(
    ("heads", "kv_heads", "head_dim"),
    [(4, 2, 32), (6, 3, 24), (2, 2, 8)],
    ids=["grouped", "head-tail", "one-group"],  # 24 and 8 leave a tail past the 16 lanes
)
@pytest.mark.parametrize("with_bias", [False, True])
def test_a_decode_layer_step_is_the_layer_computed_head_by_head(
    kernel: FewRowsKernel, heads: int, kv_heads: int, head_dim: int, with_bias: bool
) -> None:
    generator = torch.Generator().manual_seed(heads * head_dim)
    width, intermediate, slots, eps = heads * head_dim + 8, 72, 12, 1e-6

    def draw(*shape: int, scale: float = 0.3) -> torch.Tensor:
        return torch.randn(*shape, generator=generator) * scale

    shapes = {
        "qkv": ((heads + 2 * kv_heads) * head_dim, width),
        "o": (width, heads * head_dim),
        "gate": (intermediate, width),
        "up": (intermediate, width),
        "down": (width, intermediate),
    }
    weights: dict[str, torch.Tensor | None] = {"input_norm": 1 + draw(width), "post_norm": 1 + draw(width)}
    for name, shape in shapes.items():
        weights[name] = draw(*shape)
        weights[f"{name}_bias"] = draw(shape[0]) if with_bias else None

    layer = _decode_layer(heads, kv_heads, head_dim, width, intermediate, eps, weights)
    for rows in (1, 3, MAX_ROWS):
        slot = 7
        hidden = draw(rows, width, scale=1.0)
        angles = draw(rows, head_dim // 2, scale=3.0)
        rotation = torch.stack([angles.cos(), angles.sin()], dim=-1)
        keys, values = draw(rows, kv_heads, slots, head_dim), draw(rows, kv_heads, slots, head_dim)
        mask = torch.zeros(rows, slots)
        mask[0, :3] = float("-inf")  # left padding of the first row
        expected_keys, expected_values = keys.double(), values.double()
        expected = _reference_layer_step(
            hidden.double(),
            weights,
            rotation,
            expected_keys,
            expected_values,
            mask.double(),
            slot,
            heads,
            eps,
        )
        scratch = kernel.decode_scratch(layer, rows, slots)
        kernel.decode_layer(layer, hidden, rotation, keys, values, mask, slot, scratch)
        # float32 sums of float64 ones: errors in proportion to the largest value
        torch.testing.assert_close(
            hidden.double(), expected, rtol=1e-4, atol=2e-5 * float(expected.abs().max())
        )
        torch.testing.assert_close(keys.double(), expected_keys, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(values.double(), expected_values, rtol=1e-5, atol=1e-5)


def test_a_decode_layer_refuses_rows_and_slots_out_of_range(kernel: FewRowsKernel) -> None:
    layer = _decode_layer(2, 1, 8, hidden=16, intermediate=8)  # no weights: refused before reading them
    scratch = kernel.decode_scratch(layer, MAX_ROWS + 1, 4)
    keys = torch.zeros(MAX_ROWS + 1, 1, 4, 8)
    for rows, slot in [(0, 0), (MAX_ROWS + 1, 0), (1, 4), (1, -1)]:
        hidden = torch.zeros(rows, 16)
        with pytest.raises(ValueError, match="refused"):
            kernel.decode_layer(
                layer, hidden, torch.zeros(rows, 4, 2), keys, keys, torch.zeros(rows, 4), slot, scratch
            )


@pytest.mark.parametrize("with_bias", [False, True])
def test_a_normed_product_normalises_the_rows_first(kernel: FewRowsKernel, with_bias: bool) -> None:
    generator = torch.Generator().manual_seed(11)
    n, k, eps = 37, 100, 1e-5  # k leaves a tail past the 16 lanes
    weight, norm = torch.randn(n, k, generator=generator), 1 + torch.randn(k, generator=generator)
    bias = torch.randn(n, generator=generator) if with_bias else None
    for rows in range(1, MAX_ROWS + 1):
        x = torch.randn(rows, k, generator=generator) * 3
        normed = x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + eps) * norm.double()
        expected = normed @ weight.double().t() + (0.0 if bias is None else bias.double())
        out = kernel.normed_product(x, norm, eps, weight, bias, torch.empty(rows * k))
        torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5 * k**0.5)
        view = x.t().contiguous().t()  # the same values, column-major: read as its values
        assert not view.is_contiguous() or rows == 1
        torch.testing.assert_close(
            kernel.normed_product(view, norm, eps, weight, bias, torch.empty(rows * k)), out
        )


def test_too_small_a_scratch_is_refused(kernel: FewRowsKernel) -> None:
    shapes = {"qkv": (32, 16), "o": (16, 16), "gate": (8, 16), "up": (8, 16), "down": (16, 8)}
    weights = {name: torch.ones(shape) for name, shape in shapes.items()}
    weights |= {"input_norm": torch.ones(16), "post_norm": torch.ones(16)}
    layer = _decode_layer(2, 1, 8, hidden=16, intermediate=8, weights=dict(weights))
    needed = kernel.decode_scratch(layer, 2, 4).numel()
    keys, hidden, rotation, mask = (
        torch.zeros(2, 1, 4, 8),
        torch.zeros(2, 16),
        torch.zeros(2, 4, 2),
        torch.zeros(2, 4),
    )
    with pytest.raises(ValueError, match="scratch"):
        kernel.decode_layer(layer, hidden, rotation, keys, keys.clone(), mask, 0, torch.empty(needed - 1))
    with pytest.raises(ValueError, match="scratch"):
        kernel.normed_product(hidden, torch.ones(16), 1e-6, torch.ones(3, 16), None, torch.empty(31))
    # The same calls with scratch enough go through: the scratch was the reason.
    kernel.decode_layer(layer, hidden, rotation, keys, keys.clone(), mask, 0, torch.empty(needed))
    kernel.normed_product(hidden, torch.ones(16), 1e-6, torch.ones(3, 16), None, torch.empty(32))
