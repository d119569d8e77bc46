"""Code generation: built-in problems, HumanEval/MBPP loaders, reply extraction, sandboxed tests, the env.

>>> from mrlm.envs.code import builtin_tasks, extract_code
>>> len(builtin_tasks()) >= 20
True
>>> extract_code("Here:\\n```python\\ndef f():\\n    return 1\\n```", "f")
'def f():\\n    return 1\\n'
"""

from mrlm.envs.code.env import CodeEnv
from mrlm.envs.code.execution import OUTCOMES, Outcome, TestResult, Verdict, judge
from mrlm.envs.code.extract import extract_code
from mrlm.envs.code.problems import builtin_tasks
from mrlm.envs.code.program import Program, build_program
from mrlm.envs.code.records import detect_format, load_tasks
from mrlm.envs.code.tasks import CodeTask, TestStep

__all__ = [
    "OUTCOMES",
    "CodeEnv",
    "CodeTask",
    "Outcome",
    "Program",
    "TestResult",
    "TestStep",
    "Verdict",
    "build_program",
    "builtin_tasks",
    "detect_format",
    "extract_code",
    "judge",
    "load_tasks",
]
