"""Registration of the environments that ship with mrlm-envs (run on ``import mrlm.envs``).

Entry points are strings so that importing the package stays cheap: an env's module is imported the
first time the env is made.
"""

from mrlm.envs.registry import register_env


def register_builtin_envs() -> None:
    register_env(
        "mrlm/Math-v0",
        description="Arithmetic and algebra questions answered in free text; exact answer checking.",
        gymnasium_entry_point="mrlm.envs.math.env:MathEnv",
    )
