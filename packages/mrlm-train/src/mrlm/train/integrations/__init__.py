"""Bridges from MRLM envs to other training libraries.

Each bridge lives in its own module and imports its library only when used, so ``import mrlm.train``
never needs them:

* :mod:`mrlm.train.integrations.trl`: TRL's ``GRPOTrainer`` on any MRLM env, local or ``grpc://``,
  as a reward function or through ``environment_factory`` (``docs/trl.md``).
"""
