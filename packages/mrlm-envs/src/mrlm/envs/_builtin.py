"""Registration of the environments that ship with mrlm-envs, and of the remote id schemes (run on
``import mrlm.envs``).

Entry points are strings so that importing the package stays cheap: an env's module is imported the
first time the env is made.

Each registration also declares what a client of an env server may set (``client_args``, see
:mod:`mrlm.envs.server.client_args`); local callers are not bound by it. The bounds keep one session
small: counts and turns that size an episode stay modest, sandbox and verifier limits can only be
lowered, records come inline (or from a directory the operator allows), and arguments that take
objects (judges, reward functions, sandboxes, search backends, tool limits) are not settable at all.
"""

from mrlm.envs.registry import provide_scheme, register_env
from mrlm.envs.server.client_args import (
    RENDER_MODE,
    Bool,
    Choice,
    ClientArgs,
    Float,
    Int,
    Limit,
    ListOf,
    MapOf,
    Records,
    Str,
)

#: Rewards and penalties: any value a reward scale can sensibly take.
_REWARD = Float(-100.0, 100.0)
#: Limits of code run in the sandbox: a client may shorten and shrink them, never extend them.
_SANDBOX_LIMITS = {
    "time_limit_s": Limit(0.1),
    "test_time_limit_s": Limit(0.1),
    "memory_limit_mb": Limit(16),
}
#: Most records one session may be given inline (the request size is capped as well).
_MAX_RECORDS = 1_000
#: Most agents of a multi-agent coding team.
_MAX_AGENTS = 8
#: Most turns (or rounds) of one episode a client may ask for.
_MAX_TURNS = 32
_MAX_CYCLES = Int(1, 1_000, optional=True)

MATH_ARGS = ClientArgs(
    {
        "level": Int(1, 5, optional=True),
        "topics": ListOf(Str(64), max_items=64, min_items=1, single=True, optional=True),
        "records": Records(max_items=10_000, optional=True),
        "max_turns": Int(1, _MAX_TURNS),
        "correct_reward": _REWARD,
        "format_reward": _REWARD,
        "percent_as_fraction": Bool(),
        "verify_timeout": Limit(0.1),
        "answer_window": Limit(1),
        "render_mode": RENDER_MODE,
    }
)

CODE_ARGS = ClientArgs(
    {
        "records": Records(max_items=_MAX_RECORDS, optional=True),
        "max_turns": Int(1, _MAX_TURNS),
        "all_pass_bonus": _REWARD,
        "syntax_error_reward": _REWARD,
        "timeout_reward": _REWARD,
        "error_reward": _REWARD,
        "no_code_reward": _REWARD,
        **_SANDBOX_LIMITS,
        "feedback_chars": Int(40, 8_000),
        "render_mode": RENDER_MODE,
    }
)

TOOL_USE_ARGS = ClientArgs(
    {
        "tools": ListOf(Str(32), max_items=8, min_items=1, single=True, optional=True),
        "kinds": ListOf(Str(32), max_items=8, min_items=1, optional=True),
        "max_turns": Int(1, _MAX_TURNS),
        "max_calls_per_reply": Int(1, 16),
        "call_budget": Int(0, 64),
        "correct_reward": _REWARD,
        "tool_bonus": _REWARD,
        "malformed_penalty": _REWARD,
        "over_budget_penalty": _REWARD,
        "documents": Records(max_items=_MAX_RECORDS, optional=True),
        "python_output_chars": Limit(1),
        "render_mode": RENDER_MODE,
    }
)

DEBATE_ARGS = ClientArgs(
    {
        "topics": ListOf(Str(500), max_items=256, min_items=1, optional=True),
        "rounds": Int(2, 16),  # an opening and a closing at least
        "debaters_per_side": Int(1, 4),
        "reward_mode": Choice(("zero_sum", "scores")),
        "max_turn_chars": Limit(1),
        "max_cycles": _MAX_CYCLES,
        "max_action_length": Limit(1),
        "render_mode": RENDER_MODE,
    }
)

_TEAM_CODE_ARGS = {
    "records": Records(max_items=_MAX_RECORDS, optional=True),
    "num_agents": Int(2, _MAX_AGENTS),
    "max_turns": Int(1, _MAX_TURNS, optional=True),
    "weights": MapOf(_REWARD, max_items=16, optional=True),
    **_SANDBOX_LIMITS,
    "feedback_chars": Int(40, 8_000),
    "max_cycles": _MAX_CYCLES,
    "render_mode": RENDER_MODE,
}

COOP_CODE_ARGS = ClientArgs({**_TEAM_CODE_ARGS, "helper_name": Str(64, pattern=r"[A-Za-z_][A-Za-z0-9_]*")})

CLASS_COMPLETION_ARGS = ClientArgs(
    {
        **_TEAM_CODE_ARGS,
        "assignment": Choice(("env", "agents")),
        "idle_penalty": _REWARD,
        "overwrite_penalty": _REWARD,
    }
)

WRITING_ARGS = ClientArgs(
    {
        "task": Choice(("tldr", "introduction")),
        "records": Records(max_items=_MAX_RECORDS, optional=True),
        "rounds": Int(1, _MAX_TURNS, optional=True),
        "length_bands": MapOf(ListOf(Int(1, 10_000), max_items=2, min_items=2), max_items=4, optional=True),
        "max_cycles": _MAX_CYCLES,
        "render_mode": RENDER_MODE,
    }
)

TEAM_SUM_ARGS = ClientArgs(
    {
        "num_agents": Int(2, 4),
        "low": Int(0, 99),
        "high": Int(0, 99),
        "operations": ListOf(Choice(("+", "-")), max_items=8, min_items=1, single=True),
        "correct_reward": _REWARD,
        "format_reward": _REWARD,
        "rounds": Int(1, _MAX_TURNS, optional=True),
        "max_cycles": _MAX_CYCLES,
        "render_mode": RENDER_MODE,
    }
)


def register_builtin_envs() -> None:
    # Ids of envs on a server; mrlm.envs.remote (which needs gRPC) registers both schemes on import.
    provide_scheme("grpc", "mrlm.envs.remote")
    provide_scheme("grpcs", "mrlm.envs.remote")
    # The single-agent envs go without Gymnasium's passive env checker: the test suite runs
    # check_env on each, and the passive checker breaks an env whose first reset is refused (a bad
    # option or seed): it counts the reset as checked before it runs, keeps nothing of it, and the
    # first step after a good reset fails with a TypeError (gymnasium 1.x).
    register_env(
        "mrlm/Math-v0",
        description="Arithmetic, algebra and word problems answered in free text; verified answers.",
        gymnasium_entry_point="mrlm.envs.math.env:MathEnv",
        passive_checker=False,
        client_args=MATH_ARGS,
    )
    register_env(
        "mrlm/Code-v0",
        description="Write Python that passes hidden tests, run in the sandbox; optional debugging turns.",
        gymnasium_entry_point="mrlm.envs.code.env:CodeEnv",
        passive_checker=False,
        client_args=CODE_ARGS,
    )
    register_env(
        "mrlm/ToolUse-v0",
        description="Answer questions by calling tools (calculator, search, Python, files).",
        gymnasium_entry_point="mrlm.envs.tools.env:ToolUseEnv",
        passive_checker=False,
        client_args=TOOL_USE_ARGS,
    )
    register_env(
        "mrlm/Debate-v0",
        description="Two or more debaters argue a motion over rounds; a rule-based or model judge decides.",
        aec_entry_point="mrlm.envs.debate.env:DebateEnv",
        parallel_entry_point="mrlm.envs.debate.env:DebateParallelEnv",
        default_kind="aec",
        client_args=DEBATE_ARGS,
    )
    register_env(
        "mrlm/CoopCode-v0",
        description="Agents write a helper and the main function that uses it; the team is rewarded by tests.",
        aec_entry_point="mrlm.envs.coop_code.env:CoopCodeAECEnv",
        parallel_entry_point="mrlm.envs.coop_code.env:CoopCodeEnv",
        default_kind="parallel",
        client_args=COOP_CODE_ARGS,
    )
    register_env(
        "mrlm/ClassCompletion-v0",
        description="Agents share the methods of a class skeleton; the assembled class is tested.",
        aec_entry_point="mrlm.envs.class_completion.env:ClassCompletionAECEnv",
        parallel_entry_point="mrlm.envs.class_completion.env:ClassCompletionEnv",
        default_kind="parallel",
        client_args=CLASS_COMPLETION_ARGS,
    )
    register_env(
        "mrlm/Writing-v0",
        description="Agents write complementary parts of one text (summary and expansion, introduction parts).",
        aec_entry_point="mrlm.envs.writing.env:WritingAECEnv",
        parallel_entry_point="mrlm.envs.writing.env:WritingEnv",
        default_kind="parallel",
        client_args=WRITING_ARGS,
    )
    register_env(
        "mrlm/TeamSum-v0",
        description="Each member answers its own small sum; the team is right when their values add up.",
        aec_entry_point="mrlm.envs.team_sum.env:TeamSumAECEnv",
        parallel_entry_point="mrlm.envs.team_sum.env:TeamSumEnv",
        default_kind="parallel",
        client_args=TEAM_SUM_ARGS,
    )
