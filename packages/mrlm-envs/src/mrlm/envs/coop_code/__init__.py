"""Cooperative coding (``mrlm/CoopCode-v0``): agents write the functions of one program together.

>>> from mrlm.envs.coop_code import builtin_problems
>>> task = builtin_problems()[0]
>>> [part.name for part in task.parts], task.parts[1].uses
(['is_prime', 'sum_of_primes'], ('is_prime',))

Its env classes, with PettingZoo's ``env()`` and ``parallel_env()`` (a PettingZoo env module),
come from :mod:`mrlm.envs.coop_code.env`.
"""

from mrlm.envs.coop_code.assembly import Assembly, Contribution, assemble, contribute
from mrlm.envs.coop_code.env import CoopCodeAECEnv, CoopCodeEnv, env, parallel_env
from mrlm.envs.coop_code.judging import COMPONENTS, DEFAULT_WEIGHTS, Components
from mrlm.envs.coop_code.problems import builtin_problems
from mrlm.envs.coop_code.records import load_coop_tasks, split_task
from mrlm.envs.coop_code.tasks import CoopTask, Part, agent_names
from mrlm.envs.coop_code.usage import Usage, usage

__all__ = [
    "COMPONENTS",
    "DEFAULT_WEIGHTS",
    "Assembly",
    "Components",
    "Contribution",
    "CoopCodeAECEnv",
    "CoopCodeEnv",
    "CoopTask",
    "Part",
    "Usage",
    "agent_names",
    "assemble",
    "builtin_problems",
    "contribute",
    "env",
    "load_coop_tasks",
    "parallel_env",
    "split_task",
    "usage",
]
