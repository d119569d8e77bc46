"""``x W^T + b`` for the few rows of a CPU decoding step, at the speed one core reads the weights.

A decoding step multiplies a handful of rows (one per completion) by every weight matrix of the
model, so its time is the time to read the weights from memory. For 1-8 rows MKL reads them at about
half the speed one core can: measured on a 2-core CPU (AMD EPYC, AVX-512), the 20 matrices of a 512 /
4-layer model twice over (122 MB) took MKL 11.6 ms for 1 row, 13.7-17.2 ms for 4 and 20-21 ms for
8, on one thread; :file:`few_rows.c` took 6.5-7.0, 6.9-8.5 and 11.1 ms. With two models decoding
side by side (one per agent, one thread each), the same matrices once per model took 7.8-12.2 ms
with MKL against 4.4-6.1 ms. Where MKL does better (narrow weights, more rows on two threads) it
keeps the product: :func:`kernel_rows`.

The library also runs a whole decoder layer of such a step in one call (:meth:`FewRowsKernel.decode_layer`:
norms, rotary embedding, cache writes, attention, products and residuals), and a final norm with the
output projection (:meth:`FewRowsKernel.normed_product`), which
:func:`~mrlm.train.generation.direct.fused_layers` uses so that no torch operation runs between the
products of a step.

The C source ships with the package and is compiled on first use with the system's C compiler
(``$CC``, else ``cc``, ``gcc`` or ``clang``) into ``$XDG_CACHE_HOME/mrlm`` (``~/.cache/mrlm``) under
a name that hashes the source, then loaded with :mod:`ctypes`, which lets go of the GIL during the
call. The library holds AVX-512, AVX2 and baseline x86-64 versions and the CPU picks one when it is
loaded. It is used on x86-64 Linux only, where it was measured; elsewhere, where there is no compiler,
the build fails or ``MRLM_FEW_ROWS_KERNEL=0`` is set, :func:`few_rows_kernel` returns ``None``
(:func:`unavailable_reason` says why) and callers keep torch's products; nothing else changes.
"""

from __future__ import annotations

import _ctypes
import ctypes
import hashlib
import os
import platform
import shlex
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import torch

MAX_ROWS = 8
"""The most rows the kernel multiplies (its accumulators for every row stay in registers)."""
MIN_IN_FEATURES = 128
"""The narrowest weight rows (``in_features``) the kernel takes: on shorter ones its lane sums cost
more than the reads they save (hidden 64, 1 row: 0.69 ms a decoding step against MKL's 0.44)."""
TWO_THREAD_ROWS = 3
"""The most rows the kernel takes from a decoding that runs on two torch threads.

The kernel runs on one core. Measured on a 2-core CPU, one Qwen2 at 4 layers decoding: on one
thread the kernel matched or beat MKL at every width from 128 and every row count (hidden 128: 1 row
0.58 against 0.56 ms a step, 4 rows 0.73 against 0.90; hidden 512: 1 row 3.3 against 5.9, 4 rows
4.4 against 7.2, 8 rows 6.6 against 6.6 on oneDNN-packed weights, without the packing); on two
threads MKL caught up from 4 rows (hidden 512: 4.2 against 4.3 ms; hidden 768: 9.1-9.6 against 8.7)
and won at 8 (4.4 against 6.6 ms), while the kernel still won at 1 to 3 rows (hidden 512, 3 rows:
3.5 against 6.9 ms). With more threads MKL spreads a product over more cores, which was not
measured here, so those decodings keep MKL."""
SOURCE = Path(__file__).with_name("few_rows.c")
OPT_OUT = "MRLM_FEW_ROWS_KERNEL"
"""Set to ``0`` to keep torch's products."""
_COMPILE_TIMEOUT_S = 120
_LIBRARIES = ["-lm"]  # expf, sqrtf


class FewRowsKernel:
    """The loaded library: ``kernel(x, weight, bias)`` is ``F.linear(x, weight, bias)`` for ``x``
    ``[rows, k]`` with ``1 <= rows <= MAX_ROWS``, all float32 on CPU. Not differentiable: it refuses
    inputs that require gradients while gradients are recorded.

    Raises OSError when ``path`` is not a loadable library holding the kernel."""

    def __init__(self, path: Path) -> None:
        self.path = path
        library = ctypes.CDLL(str(path))
        try:
            function, normed, layer, scratch = (
                library.mrlm_few_rows,
                library.mrlm_normed_few_rows,
                library.mrlm_decode_layer,
                library.mrlm_decode_scratch,
            )
        except AttributeError as error:
            # Unloaded, so that a library built again under this path is loaded afresh (the loader
            # would hand back this one by its name).
            _ctypes.dlclose(library._handle)
            raise OSError(f"{path} lacks the kernel's functions ({error})") from error
        pointer, long = ctypes.c_void_p, ctypes.c_long
        function.argtypes = [ctypes.c_int, pointer, pointer, pointer, pointer, long, long]
        function.restype = ctypes.c_int
        normed.argtypes = [
            ctypes.c_int,
            pointer,
            pointer,
            ctypes.c_float,
            *[pointer] * 3,
            long,
            long,
            pointer,
            long,
        ]
        normed.restype = ctypes.c_int
        layer_pointer = ctypes.POINTER(DecodeLayer)
        layer.argtypes = [layer_pointer, ctypes.c_int, *[pointer] * 5, long, long, pointer, long]
        layer.restype = ctypes.c_int
        scratch.argtypes = [layer_pointer, ctypes.c_int, long]
        scratch.restype = long
        self._function, self._normed, self._layer, self._scratch = function, normed, layer, scratch

    def __call__(
        self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Check the arguments (ValueError), then :meth:`product`."""
        for name, tensor in (("x", x), ("weight", weight), ("bias", bias)):
            if tensor is not None and (tensor.device.type != "cpu" or tensor.dtype != torch.float32):
                raise ValueError(f"{name} must be float32 on CPU, not {tensor.dtype} on {tensor.device}")
        if x.dim() != 2 or not 1 <= x.shape[0] <= MAX_ROWS:
            raise ValueError(f"x must have 1 to {MAX_ROWS} rows of 2-D, not shape {tuple(x.shape)}")
        if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias)):
            raise ValueError(
                "the kernel is not differentiable: call it under torch.no_grad() or inference_mode()"
            )
        if (
            weight.dim() != 2
            or weight.shape[1] != x.shape[1]
            or (bias is not None and bias.shape != weight.shape[:1])
        ):
            bias_shape = None if bias is None else tuple(bias.shape)
            raise ValueError(
                f"x {tuple(x.shape)}, weight {tuple(weight.shape)} and bias {bias_shape} do not match"
            )
        return self.product(x, weight.contiguous(), None if bias is None else bias.contiguous())

    def product(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """``x W^T + b`` without checks: float32 CPU tensors of matching shapes, ``x`` of 1 to
        :data:`MAX_ROWS` rows, ``weight`` and ``bias`` contiguous (decoding's hot path)."""
        x = x.contiguous()
        out = torch.empty((x.shape[0], weight.shape[0]), dtype=torch.float32, device="cpu")
        bias_pointer = None if bias is None else bias.data_ptr()
        self._function(
            x.shape[0],
            x.data_ptr(),
            weight.data_ptr(),
            bias_pointer,
            out.data_ptr(),
            weight.shape[0],
            x.shape[1],
        )
        return out

    def normed_product(
        self,
        x: torch.Tensor,
        norm: torch.Tensor,
        eps: float,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        scratch: torch.Tensor,
    ) -> torch.Tensor:
        """:meth:`product` of ``x``'s rows RMS-normalised and scaled by ``norm`` (a final norm and
        an output projection in one call), without checks: as :meth:`product`, with ``norm`` ``[k]``
        contiguous; ValueError when the C function refuses the rows or too small a ``scratch``
        (it needs as many floats as ``x``)."""
        x = x.contiguous()
        out = torch.empty((x.shape[0], weight.shape[0]), dtype=torch.float32, device="cpu")
        refused = self._normed(
            x.shape[0],
            x.data_ptr(),
            norm.data_ptr(),
            eps,
            weight.data_ptr(),
            None if bias is None else bias.data_ptr(),
            out.data_ptr(),
            weight.shape[0],
            x.shape[1],
            scratch.data_ptr(),
            scratch.numel(),
        )
        _check(refused, f"the normed product refused {x.shape[0]} rows of {x.shape[1]}", scratch)
        return out

    def decode_scratch(self, layer: DecodeLayer, rows: int, slots: int) -> torch.Tensor:
        """The scratch :meth:`decode_layer` needs for ``rows`` rows and a cache of ``slots`` slots."""
        return torch.empty(int(self._scratch(ctypes.byref(layer), rows, slots)), dtype=torch.float32)

    def decode_layer(
        self,
        layer: DecodeLayer,
        hidden: torch.Tensor,
        rotation: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        mask: torch.Tensor,
        slot: int,
        scratch: torch.Tensor,
    ) -> None:
        """One decoding step of ``hidden`` ``[rows, D]`` (updated in place) through ``layer``,
        writing its keys and values to ``slot`` of ``keys`` and ``values`` ``[rows, Hkv, S, d]``;
        ``rotation`` ``[rows, d/2, 2]`` holds each row's (cos, sin), ``mask`` ``[rows, S]`` is added
        to the attention scores (see ``mrlm_decode_layer`` in :file:`few_rows.c`).

        Without checks beyond the C function's own (ValueError when it refuses rows, slots or too
        small a scratch): float32 contiguous CPU tensors of those shapes, ``keys`` and ``values``
        with ``rows`` rows, and the tensors ``layer`` points to alive."""
        refused = self._layer(
            ctypes.byref(layer),
            hidden.shape[0],
            hidden.data_ptr(),
            rotation.data_ptr(),
            keys.data_ptr(),
            values.data_ptr(),
            mask.data_ptr(),
            slot,
            keys.shape[2],
            scratch.data_ptr(),
            scratch.numel(),
        )
        _check(
            refused,
            f"the decode layer refused {hidden.shape[0]} rows at slot {slot} of {keys.shape[2]}",
            scratch,
        )


def _check(refused: int, message: str, scratch: torch.Tensor) -> None:
    """ValueError with ``message`` when a C function refused its arguments (returned non-zero)."""
    if refused:
        raise ValueError(f"{message} (scratch of {scratch.numel()} floats)")


class DecodeLayer(ctypes.Structure):
    """``struct decode_layer`` of :file:`few_rows.c`: a decoder layer's shapes and weights, as
    pointers (null for no bias). Whoever fills it keeps the tensors alive while it is used."""

    _fields_ = [
        *[(name, ctypes.c_long) for name in ("hidden", "heads", "kv_heads", "head_dim", "intermediate")],
        ("eps", ctypes.c_float),
        *[(name, ctypes.c_void_p) for name in ("input_norm", "post_norm")],
        *[
            (f"{name}{suffix}", ctypes.c_void_p)
            for name in ("qkv", "o", "gate", "up", "down")
            for suffix in ("", "_bias")
        ],
    ]


_lock = threading.Lock()
_loaded: FewRowsKernel | None = None
_reason: str | None = None
_tried = False


def few_rows_kernel() -> FewRowsKernel | None:
    """The kernel, built and loaded on the first call (once per process), or ``None``."""
    global _loaded, _reason, _tried
    with _lock:
        if not _tried:
            _tried = True
            if os.environ.get(OPT_OUT, "").strip() == "0":
                _reason = f"{OPT_OUT}=0"
            elif (platform.system(), platform.machine()) != ("Linux", "x86_64"):
                _reason = f"used on x86-64 Linux only, not {platform.system()} {platform.machine()}"
            else:
                try:
                    _loaded = _load()
                except (OSError, RuntimeError, subprocess.SubprocessError) as error:
                    _reason = str(error)
        return _loaded


def _load() -> FewRowsKernel:
    try:
        return FewRowsKernel(build())
    except OSError:  # a damaged cached build (cut short, or another file under its name): once afresh
        return FewRowsKernel(build(rebuild=True))


def unavailable_reason() -> str | None:
    """Why :func:`few_rows_kernel` returned ``None`` (``None`` when it is loaded or not yet tried)."""
    return _reason


def kernel_rows(weight: torch.Tensor, threads: int | None = None) -> int:
    """The most rows of a CPU decoding step whose products with ``weight`` go to the kernel (0: none).

    ``weight`` must be float32 on CPU, at least :data:`MIN_IN_FEATURES` wide, with no gradient being
    recorded, and the kernel must load; then :data:`MAX_ROWS` on one torch thread (each agent's model
    decoding side by side on its own thread, or a one-core process), :data:`TWO_THREAD_ROWS` on two,
    none on more. ``threads``: the torch threads the decoding runs with (default: this thread's
    count now, as when a decoding starts)."""
    if not (
        weight.device.type == "cpu"
        and weight.dtype == torch.float32
        and weight.dim() == 2
        and weight.shape[1] >= MIN_IN_FEATURES
        and not torch.is_grad_enabled()
    ):
        return 0
    count = torch.get_num_threads() if threads is None else threads
    rows = {1: MAX_ROWS, 2: TWO_THREAD_ROWS}.get(count, 0)
    return rows if rows and few_rows_kernel() is not None else 0


def build(
    cache_dir: Path | None = None,
    compiler: Sequence[str] | None = None,
    extra_flags: Sequence[str] = (),
    rebuild: bool = False,
) -> Path:
    """Compile :data:`SOURCE` into a shared library unless a build of the same source and flags is
    cached (``rebuild=True`` compiles it anyway and replaces it).

    ``compiler`` is a command (``$CC`` split as a shell would, by default). Raises RuntimeError when
    no compiler is found or the compilation fails (with its output). The library is written under a
    temporary name and renamed, so processes building at once (one per rank) never load a
    half-written file. Where the cache directory cannot be written, the build goes to a directory of
    this user's own under the system's temporary directory.
    """
    flags = ["-O3", "-shared", "-fPIC", *extra_flags]
    key = hashlib.sha256(
        b"\0".join(
            [SOURCE.read_bytes(), platform.machine().encode(), *map(str.encode, [*flags, *_LIBRARIES])]
        )
    )
    name = f"few_rows-{key.hexdigest()[:16]}.so"
    directory = cache_dir or _cache_dir()
    if not rebuild and (directory / name).exists():
        return directory / name
    command = list(compiler) if compiler else _find_compiler()
    if not command:
        raise RuntimeError("no C compiler found ($CC, cc, gcc or clang)")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=directory, prefix=name, suffix=".partial")
    except OSError:  # a read-only cache
        directory = _private_temporary_dir()
        if not rebuild and (directory / name).exists():
            return directory / name
        handle, partial = tempfile.mkstemp(dir=directory, prefix=name, suffix=".partial")
    os.close(handle)
    library = directory / name
    try:
        result = subprocess.run(
            [*command, *flags, "-o", partial, str(SOURCE), *_LIBRARIES],
            capture_output=True,
            text=True,
            timeout=_COMPILE_TIMEOUT_S,
            check=False,
        )
        if result.returncode != 0:
            output = (result.stderr or result.stdout).strip()[-2000:]
            raise RuntimeError(f"{shlex.join(command)} could not build {SOURCE.name}: {output}")
        os.replace(partial, library)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return library


def _find_compiler() -> list[str]:
    configured = shlex.split(os.environ.get("CC", ""))
    if configured and shutil.which(configured[0]):
        return configured  # with its arguments ("ccache gcc", "gcc -m64")
    found = next((name for name in ("cc", "gcc", "clang") if shutil.which(name)), None)
    return [found] if found else []


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mrlm"


def _private_temporary_dir() -> Path:
    """``<tmp>/mrlm-kernel-<uid>``, made by and for this user only (checked: another user could
    have made it to plant a library); a fresh directory where it is not."""
    directory = Path(tempfile.gettempdir()) / f"mrlm-kernel-{os.getuid()}"
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        status = os.lstat(directory)
        if stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid() and not status.st_mode & 0o077:
            return directory
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="mrlm-kernel-"))
