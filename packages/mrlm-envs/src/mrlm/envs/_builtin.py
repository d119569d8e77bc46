"""Registration of the environments that ship with mrlm-envs (run on ``import mrlm.envs``).

Entry points are strings so that importing the package stays cheap: an env's module is imported the
first time the env is made.
"""

from mrlm.envs.registry import register_env


def register_builtin_envs() -> None:
    register_env(
        "mrlm/Math-v0",
        description="Arithmetic, algebra and word problems answered in free text; verified answers.",
        gymnasium_entry_point="mrlm.envs.math.env:MathEnv",
    )
    register_env(
        "mrlm/Code-v0",
        description="Write Python that passes hidden tests, run in the sandbox; optional debugging turns.",
        gymnasium_entry_point="mrlm.envs.code.env:CodeEnv",
    )
    register_env(
        "mrlm/ToolUse-v0",
        description="Answer questions by calling tools (calculator, search, Python, files).",
        gymnasium_entry_point="mrlm.envs.tools.env:ToolUseEnv",
    )
    register_env(
        "mrlm/Debate-v0",
        description="Two or more debaters argue a motion over rounds; a rule-based or model judge decides.",
        aec_entry_point="mrlm.envs.debate.env:DebateEnv",
        parallel_entry_point="mrlm.envs.debate.env:DebateParallelEnv",
        default_kind="aec",
    )
    register_env(
        "mrlm/CoopCode-v0",
        description="Agents write a helper and the main function that uses it; the team is rewarded by tests.",
        aec_entry_point="mrlm.envs.coop_code.env:CoopCodeAECEnv",
        parallel_entry_point="mrlm.envs.coop_code.env:CoopCodeEnv",
        default_kind="parallel",
    )
    register_env(
        "mrlm/ClassCompletion-v0",
        description="Agents share the methods of a class skeleton; the assembled class is tested.",
        aec_entry_point="mrlm.envs.class_completion.env:ClassCompletionAECEnv",
        parallel_entry_point="mrlm.envs.class_completion.env:ClassCompletionEnv",
        default_kind="parallel",
    )
    register_env(
        "mrlm/Writing-v0",
        description="Agents write complementary parts of one text (summary and expansion, introduction parts).",
        aec_entry_point="mrlm.envs.writing.env:WritingAECEnv",
        parallel_entry_point="mrlm.envs.writing.env:WritingEnv",
        default_kind="parallel",
    )
