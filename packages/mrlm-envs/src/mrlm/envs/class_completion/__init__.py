"""Class completion (``mrlm/ClassCompletion-v0``): agents share the methods of a class skeleton.

>>> from mrlm.envs.class_completion import builtin_classes
>>> task = builtin_classes()[0]
>>> task.class_name, task.method_names
('Inventory', ('add_item', 'remove_item', 'quantity', 'most_stocked'))

Its env classes, with PettingZoo's ``env()`` and ``parallel_env()`` (a PettingZoo env module),
come from :mod:`mrlm.envs.class_completion.env`.
"""

from mrlm.envs.class_completion.assembly import Assembly, assemble
from mrlm.envs.class_completion.classes import builtin_classes, builtin_records
from mrlm.envs.class_completion.classeval import class_task, load_class_tasks
from mrlm.envs.class_completion.env import ClassCompletionAECEnv, ClassCompletionEnv, env, parallel_env
from mrlm.envs.class_completion.methods import ReplyCode, Written, read_reply
from mrlm.envs.class_completion.ownership import ASSIGNMENTS, Assignment, Ledger, apply_round, deal
from mrlm.envs.class_completion.scoring import COMPONENTS, DEFAULT_WEIGHTS, balance
from mrlm.envs.class_completion.tasks import ClassTask, Layout, Method

__all__ = [
    "ASSIGNMENTS",
    "COMPONENTS",
    "DEFAULT_WEIGHTS",
    "Assembly",
    "Assignment",
    "ClassCompletionAECEnv",
    "ClassCompletionEnv",
    "ClassTask",
    "Layout",
    "Ledger",
    "Method",
    "ReplyCode",
    "Written",
    "apply_round",
    "assemble",
    "balance",
    "builtin_classes",
    "builtin_records",
    "class_task",
    "deal",
    "env",
    "load_class_tasks",
    "parallel_env",
    "read_reply",
]
