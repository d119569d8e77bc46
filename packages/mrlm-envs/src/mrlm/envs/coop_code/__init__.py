"""Cooperative coding (``mrlm/CoopCode-v0``): agents write the functions of one program together.

>>> from mrlm.envs.coop_code import builtin_problems
>>> task = builtin_problems()[0]
>>> [part.name for part in task.parts], task.parts[1].uses
(['is_prime', 'sum_of_primes'], ('is_prime',))

The env classes live in :mod:`mrlm.envs.coop_code.env`, which also offers PettingZoo's ``env()``
and ``parallel_env()`` factories.
"""

from mrlm.envs.coop_code.assembly import Assembly, Contribution, assemble, contribute
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
    "CoopTask",
    "Part",
    "Usage",
    "agent_names",
    "assemble",
    "builtin_problems",
    "contribute",
    "load_coop_tasks",
    "split_task",
    "usage",
]
