"""Statistics over the masked entries of a tensor (typically ``[B, T]`` with ``mask`` 1 on the model's tokens).

``mask`` has the shape of ``values`` and is read as a boolean: an entry counts where ``mask`` is
nonzero (or True). Unmasked entries never reach the result, so they may hold anything, even NaN or
inf (e.g. log-probs of padding). Empty selections give NaN, like ``torch.mean`` of an empty tensor.
"""

from __future__ import annotations

import torch


def _selected(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``mask`` as a bool tensor, after checking it matches ``values``."""
    if mask.shape != values.shape:
        raise ValueError(
            f"mask must have the shape of values, got {tuple(mask.shape)} and {tuple(values.shape)}"
        )
    if not values.is_floating_point():
        raise ValueError(f"values must be a floating-point tensor, got {values.dtype}")
    return mask != 0


def _kept(values: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
    """``values`` with unmasked entries set to 0, so that NaN or inf there reach neither results nor gradients."""
    return torch.where(selected, values, torch.zeros_like(values))


def _sum(values: torch.Tensor, selected: torch.Tensor, dim: int | None, keepdim: bool) -> torch.Tensor:
    kept = _kept(values, selected)
    return kept.sum() if dim is None else kept.sum(dim=dim, keepdim=keepdim)


def _count(values: torch.Tensor, selected: torch.Tensor, dim: int | None, keepdim: bool) -> torch.Tensor:
    return _sum(torch.ones_like(values), selected, dim, keepdim)


def masked_sum(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Sum of the masked entries: ``sum_i values_i`` over ``mask_i != 0``.

    Args:
        values: any shape, floating point.
        mask: same shape as ``values``.
        dim: dimension to reduce; ``None`` reduces everything to a scalar.

    Returns:
        A scalar, or ``values`` with ``dim`` removed; 0 where nothing is masked.
    """
    return _sum(values, _selected(values, mask), dim, keepdim=False)


def masked_mean(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of the masked entries: ``sum(values * mask) / sum(mask)``.

    Args:
        values: any shape, floating point.
        mask: same shape as ``values``.
        dim: dimension to reduce (``dim=1`` on ``[B, T]`` gives one mean per sequence); ``None``
            reduces everything to a scalar.

    Returns:
        A scalar, or ``values`` with ``dim`` removed; NaN where nothing is masked.
    """
    selected = _selected(values, mask)
    return _sum(values, selected, dim, keepdim=False) / _count(values, selected, dim, keepdim=False)


def masked_var(
    values: torch.Tensor, mask: torch.Tensor, dim: int | None = None, *, unbiased: bool = True
) -> torch.Tensor:
    """Variance of the masked entries, with Bessel's correction when ``unbiased``.

    With ``n`` masked entries and their mean ``m``::

        var = sum_i (values_i - m)^2 / (n - 1)     (unbiased; / n otherwise)

    Fewer than 2 masked entries (unbiased) or none (biased) give NaN, as ``torch.var`` does; this
    function does not raise, since with ``dim`` only some rows may be short.

    Args:
        values: any shape, floating point.
        mask: same shape as ``values``.
        dim: dimension to reduce; ``None`` reduces everything to a scalar.
        unbiased: divide by ``n - 1`` rather than ``n``.

    Returns:
        A scalar, or ``values`` with ``dim`` removed.
    """
    selected = _selected(values, mask)
    values = _kept(values, selected)
    count = _count(values, selected, dim, keepdim=True)
    mean = _sum(values, selected, dim, keepdim=True) / count
    squares = _sum((values - mean) ** 2, selected, dim, keepdim=True)
    # Too few entries: squares is 0 and the clamped denominator 0, so 0 / 0 gives NaN.
    var = squares / (count - 1 if unbiased else count).clamp(min=0.0)
    return var if dim is None else var.squeeze(dim)


def masked_whiten(
    values: torch.Tensor, mask: torch.Tensor, *, shift_mean: bool = True, eps: float = 1e-8
) -> torch.Tensor:
    """Normalise the masked entries to mean 0 and standard deviation 1, over all masked entries.

    With ``m`` and ``var`` the masked mean and (unbiased) variance::

        out_i = (values_i - m) / sqrt(var + eps)          (shift_mean=True)
        out_i = (values_i - m) / sqrt(var + eps) + m      (shift_mean=False: the mean is kept)

    Used to normalise per-token advantages over a batch (e.g. PPO's advantage whitening, or
    REINFORCE++'s global normalisation).

    Args:
        values: any shape, floating point.
        mask: same shape as ``values``; at least 2 entries must be masked.
        shift_mean: centre the result on 0; ``False`` keeps the original mean (only the spread is
            rescaled).
        eps: added to the variance so that equal values give ``0`` (or ``m``), not NaN.

    Returns:
        ``values``' shape; 0 where ``mask`` is 0.

    Raises:
        ValueError: fewer than 2 masked entries (the variance is undefined).
    """
    selected = _selected(values, mask)
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    count = int(selected.sum())
    if count < 2:
        raise ValueError(f"whitening needs at least 2 masked entries, got {count}")
    values = _kept(values, selected)
    mean = masked_mean(values, selected)
    var = masked_var(values, selected)
    whitened = (values - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        whitened = whitened + mean
    return _kept(whitened, selected)
