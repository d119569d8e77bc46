"""mrlm.train: reinforcement learning for Hugging Face causal LMs on MRLM environments.

Importing this package is cheap; torch and transformers load with the modules that need them
(``mrlm.train.tiny``, ``mrlm.train.info``'s device probe).
"""

__version__ = "0.1.0"
