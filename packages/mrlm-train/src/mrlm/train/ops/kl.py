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


class AdaptiveKLController:
    """A KL coefficient that follows a target KL (Ziegler et al. 2019, "Fine-Tuning Language Models
    from Human Preferences", section 2.2)::

        e     = clip(KL / target - 1, -0.2, 0.2)
        coef <- coef * (1 + e * n / horizon)

    where ``KL`` is the mean KL of a reply to the reference and ``n`` the number of replies the
    step trained on: the coefficient grows while the policy drifts further than ``target`` and
    shrinks while it stays closer. ``state_dict``/``load_state_dict`` carry it across a resume.
    """

    def __init__(self, coef: float, target: float, horizon: float = 10_000.0) -> None:
        if coef < 0 or target <= 0 or horizon <= 0:
            raise ValueError(
                f"need coef >= 0, target > 0 and horizon > 0; got {coef}, {target} and {horizon}"
            )
        self.coef, self.target, self.horizon = float(coef), float(target), float(horizon)

    def update(self, kl: float, n: int) -> float:
        """Move the coefficient after a step whose replies had mean KL ``kl``; return the new one."""
        error = min(max(kl / self.target - 1.0, -0.2), 0.2)
        self.coef *= 1.0 + error * n / self.horizon
        return self.coef

    def state_dict(self) -> dict[str, float]:
        return {"coef": self.coef}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.coef = float(state["coef"])
