"""Playing envs with one policy or several and recording what the trainer needs.

:class:`RolloutEngine` plays groups of episodes of single-agent (Gymnasium) and multi-agent
(PettingZoo AEC and Parallel, local or remote) text envs with a map from agent to :class:`Policy`,
and returns one :class:`Trajectory` per agent and episode (tokens, the mask of that agent's own
replies, sampling log-probs, per-turn rewards, turn spans, agent and policy); :class:`Conversation`
builds a chat's tokens incrementally; :func:`collate` pads trajectories into a :class:`RolloutBatch`
(with per-token rewards) for the losses. See ``docs/multi_agent_rollouts.md``.
"""

from mrlm.train.rollout.batch import RolloutBatch, collate, reward_tensor
from mrlm.train.rollout.conversation import Conversation, TemplatePrefixError
from mrlm.train.rollout.engine import JointMode, RolloutEngine
from mrlm.train.rollout.errors import (
    EnvFailedError,
    EnvOutputError,
    ReplayMismatchError,
    RewardOverflowError,
)
from mrlm.train.rollout.policies import DEFAULT_POLICY, AgentPolicies, Policy
from mrlm.train.rollout.prompts import SystemPrompt, default_system_prompt
from mrlm.train.rollout.replay import replay
from mrlm.train.rollout.rounds import RoundEnv, round_env
from mrlm.train.rollout.trajectory import Trajectory, by_policy, load_jsonl, save_jsonl

__all__ = [
    "DEFAULT_POLICY",
    "AgentPolicies",
    "Conversation",
    "EnvFailedError",
    "EnvOutputError",
    "JointMode",
    "Policy",
    "ReplayMismatchError",
    "RewardOverflowError",
    "RolloutBatch",
    "RolloutEngine",
    "RoundEnv",
    "SystemPrompt",
    "TemplatePrefixError",
    "Trajectory",
    "by_policy",
    "collate",
    "default_system_prompt",
    "load_jsonl",
    "replay",
    "reward_tensor",
    "round_env",
    "save_jsonl",
]
