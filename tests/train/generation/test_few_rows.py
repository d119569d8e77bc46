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
