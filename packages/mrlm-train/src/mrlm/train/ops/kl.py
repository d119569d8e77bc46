"""Per-token estimators of KL(pi || pi_ref) from log-probabilities of sampled tokens."""

from __future__ import annotations

import torch


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """The k3 estimator (Schulman 2020, "Approximating KL divergence"), used by GRPO.

    With ``log_ratio = ref_logp - logp`` on tokens sampled from ``pi``::

        k3 = exp(log_ratio) - log_ratio - 1

    It is unbiased for KL(pi || pi_ref), never negative, and has low variance.

    Args:
        logp: ``[B, T]`` log-probs of the sampled tokens under the policy being trained.
        ref_logp: ``[B, T]`` log-probs of the same tokens under the frozen reference.

    Returns:
        ``[B, T]`` per-token estimates (mask them before averaging).
    """
    log_ratio = ref_logp - logp
    return torch.exp(log_ratio) - log_ratio - 1.0
