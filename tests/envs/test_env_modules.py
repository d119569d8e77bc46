"""Every multi-agent env package is a PettingZoo env module: ``env()`` and ``parallel_env()`` build its
two forms of one game, and PettingZoo's own tests pass on the package itself."""

from __future__ import annotations

import types

import pytest
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test

import mrlm.envs.class_completion
import mrlm.envs.coop_code
import mrlm.envs.debate
import mrlm.envs.team_sum
import mrlm.envs.writing
from mrlm.envs import GameAECEnv, GameParallelEnv

PACKAGES = {
    "debate": (mrlm.envs.debate, "DebateEnv", "DebateParallelEnv"),
    "coop_code": (mrlm.envs.coop_code, "CoopCodeAECEnv", "CoopCodeEnv"),
    "class_completion": (mrlm.envs.class_completion, "ClassCompletionAECEnv", "ClassCompletionEnv"),
    "writing": (mrlm.envs.writing, "WritingAECEnv", "WritingEnv"),
    "team_sum": (mrlm.envs.team_sum, "TeamSumAECEnv", "TeamSumEnv"),
}

# Role names ("pro", "helper") read better than PettingZoo's suggested "player_0" style.
pytestmark = pytest.mark.filterwarnings("ignore:We recommend agents to be named:UserWarning")


@pytest.mark.parametrize("name", PACKAGES)
def test_the_package_builds_both_forms_of_one_game(name: str) -> None:
    package, aec_name, parallel_name = PACKAGES[name]
    aec, parallel = package.env(), package.parallel_env()
    assert type(aec) is getattr(package, aec_name) and isinstance(aec, GameAECEnv)
    assert type(parallel) is getattr(package, parallel_name) and isinstance(parallel, GameParallelEnv)
    assert type(aec.game) is type(parallel.game)
    assert aec.possible_agents == parallel.possible_agents == list(aec.game.agents)
    assert {"env", "parallel_env"} <= set(package.__all__)


@pytest.mark.parametrize("name", PACKAGES)
def test_max_cycles_test_on_the_package(name: str) -> None:
    package: types.ModuleType = PACKAGES[name][0]
    max_cycles_test(package)


@pytest.mark.parametrize("name", PACKAGES)
def test_api_tests_on_both_forms(name: str) -> None:
    package = PACKAGES[name][0]
    api_test(package.env(), num_cycles=20)
    parallel_api_test(package.parallel_env(), num_cycles=20)
