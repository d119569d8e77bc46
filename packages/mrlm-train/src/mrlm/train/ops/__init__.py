"""Pure tensor functions shared by the algorithms: advantages, policy losses, KL estimators.

Shapes are written ``[B]`` (one value per sequence) and ``[B, T]`` (one per token); ``mask`` is 1 on
the model's own tokens and 0 elsewhere (prompt, environment text, padding).

Modules: ``advantages`` (GRPO group advantages), ``estimators`` (RLOO, group-mean, max and batch
baselines, GAE), ``stats`` (masked sum, mean, variance, whitening), ``policy_loss``, ``value_loss``
(the critic's), ``entropy``, ``rewards`` (per-token rewards for a critic) and ``kl`` (estimators and an
adaptive coefficient).
"""
