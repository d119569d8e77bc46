"""Subcommands of the ``mrlm-train`` command line.

A subcommand is an arguments dataclass (its docstring is the help text, its field docstrings
document the flags) plus a function that runs it and returns an exit status. Adding one means
writing a module with those two and listing a ``Command`` for it in ``COMMANDS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mrlm.train.algorithms.dpo import DPOConfig
from mrlm.train.algorithms.grpo import GRPOConfig
from mrlm.train.algorithms.ippo import IPPOConfig
from mrlm.train.algorithms.magrpo import MAGRPOConfig
from mrlm.train.algorithms.mareinforce import MAREINFORCEConfig
from mrlm.train.algorithms.maremax import MAReMaxConfig
from mrlm.train.algorithms.marloo import MARLOOConfig
from mrlm.train.algorithms.online_dpo import OnlineDPOConfig
from mrlm.train.algorithms.ppo import PPOConfig
from mrlm.train.algorithms.sft import SFTConfig
from mrlm.train.commands.collect import CollectArgs, run_collect
from mrlm.train.commands.dpo import run_dpo, run_online_dpo
from mrlm.train.commands.eval import EvalArgs, run_eval
from mrlm.train.commands.grpo import run_grpo
from mrlm.train.commands.info import InfoArgs, run_info
from mrlm.train.commands.multi_agent import run_multi_agent
from mrlm.train.commands.plot import PlotArgs, run_plot
from mrlm.train.commands.ppo import run_ppo
from mrlm.train.commands.quickstart import run_quickstart_command
from mrlm.train.commands.sft import run_sft
from mrlm.train.commands.tiny_model import TinyModelArgs, run_tiny_model
from mrlm.train.quickstart import QuickstartConfig

ArgsT = TypeVar("ArgsT")


@dataclass(frozen=True)
class Command(Generic[ArgsT]):
    """One subcommand: its name on the command line, its arguments type and its runner."""

    name: str
    args: type[ArgsT]
    run: Callable[[ArgsT], int]


COMMANDS: tuple[Command[Any], ...] = (
    Command("quickstart", QuickstartConfig, run_quickstart_command),
    Command("info", InfoArgs, run_info),
    Command("sft", SFTConfig, run_sft),
    Command("grpo", GRPOConfig, run_grpo),
    Command("ppo", PPOConfig, run_ppo),
    Command("dpo", DPOConfig, run_dpo),
    Command("online-dpo", OnlineDPOConfig, run_online_dpo),
    Command("magrpo", MAGRPOConfig, run_multi_agent),
    Command("mareinforce", MAREINFORCEConfig, run_multi_agent),
    Command("marloo", MARLOOConfig, run_multi_agent),
    Command("maremax", MAReMaxConfig, run_multi_agent),
    Command("ippo", IPPOConfig, run_multi_agent),
    Command("eval", EvalArgs, run_eval),
    Command("collect", CollectArgs, run_collect),
    Command("plot", PlotArgs, run_plot),
    Command("tiny-model", TinyModelArgs, run_tiny_model),
)
