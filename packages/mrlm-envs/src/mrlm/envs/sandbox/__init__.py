"""Run untrusted Python (model-written code, tool calls) outside the caller's process, under limits.

>>> from mrlm.envs.sandbox import Sandbox
>>> result = Sandbox().run("print(6 * 7)")
>>> result.status.value, result.stdout
('ok', '42\\n')
"""

from mrlm.envs.sandbox.api import ExecutionResult, IsolationReport, Limits, Status
from mrlm.envs.sandbox.runner import Sandbox

__all__ = ["ExecutionResult", "IsolationReport", "Limits", "Sandbox", "Status"]
