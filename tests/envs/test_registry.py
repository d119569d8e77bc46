"""Registration where users look for ids, and one ``make`` with clear errors."""

from __future__ import annotations

import gymnasium
import pettingzoo
import pytest

import mrlm.envs
from mrlm.envs import EnvArgumentError, UnknownEnvError, make, register_env
from tests.envs.toy_games import GuessNumberParallel, GuessWordAEC


def test_gymnasium_make_finds_the_math_env() -> None:
    env = gymnasium.make("mrlm/Math-v0", level=2)
    observation, _ = env.reset(seed=0)
    assert isinstance(observation, str) and observation.startswith("What is")


def test_pettingzoo_make_finds_multi_agent_ids() -> None:
    assert isinstance(pettingzoo.make("aec", "mrlm-test/GuessWord-v0").unwrapped, GuessWordAEC)
    assert isinstance(pettingzoo.make("parallel", "mrlm-test/GuessNumber-v0"), GuessNumberParallel)


def test_our_make_builds_both_kinds() -> None:
    assert isinstance(make("mrlm/Math-v0"), gymnasium.Env)
    assert isinstance(make("mrlm-test/GuessNumber-v0"), GuessNumberParallel)
    env = make("mrlm-test/GuessNumber-v0", rounds=3)
    assert env.rounds == 3


def test_unknown_id_names_the_known_ids_and_a_close_match() -> None:
    with pytest.raises(UnknownEnvError) as caught:
        make("mrlm/Maths-v0")
    message = str(caught.value)
    assert "unknown env id 'mrlm/Maths-v0'" in message
    assert "Did you mean 'mrlm/Math-v0'" in message
    assert "Known ids:" in message and "mrlm-test/GuessWord-v0" in message


def test_bad_keyword_names_the_argument_and_what_is_accepted() -> None:
    with pytest.raises(EnvArgumentError) as caught:
        make("mrlm/Math-v0", levle=3)
    message = str(caught.value)
    assert "'levle'" in message and "did you mean 'level'" in message and "max_turns" in message


def test_bad_keyword_value_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="level must be one of"):
        make("mrlm/Math-v0", level=9)


def test_kind_not_offered() -> None:
    with pytest.raises(EnvArgumentError, match="offered as gymnasium, not 'aec'"):
        make("mrlm/Math-v0", kind="aec")
    with pytest.raises(EnvArgumentError, match="unknown kind"):
        make("mrlm/Math-v0", kind="vector")  # type: ignore[arg-type]


def test_list_envs_entries() -> None:
    entries = {entry.id: entry for entry in mrlm.envs.list_envs()}
    assert entries["mrlm/Math-v0"].kinds == ("gymnasium",)
    assert not entries["mrlm/Math-v0"].multi_agent
    assert entries["mrlm-test/GuessWord-v0"].kinds == ("aec",)
    assert entries["mrlm-test/GuessWord-v0"].multi_agent
    assert all(entry.description for entry in entries.values())


def test_register_env_validates() -> None:
    with pytest.raises(ValueError, match="at least one entry point"):
        register_env("mrlm-test/Nothing-v0", description="x")
    with pytest.raises(ValueError, match="either single-agent"):
        register_env(
            "mrlm-test/Both-v0",
            description="x",
            gymnasium_entry_point="a:b",
            aec_entry_point="a:c",
        )
    with pytest.raises(ValueError, match="default_kind"):
        register_env("mrlm-test/Kind-v0", description="x", aec_entry_point="a:b", default_kind="parallel")


def test_default_kind_orders_kinds() -> None:
    entry = register_env(
        "mrlm-test/TwoKinds-v0",
        description="both APIs",
        aec_entry_point="tests.envs.toy_games:aec_env",
        parallel_entry_point="tests.envs.toy_games:parallel_env",
        default_kind="parallel",
    )
    assert entry.kinds == ("parallel", "aec")
    assert isinstance(make("mrlm-test/TwoKinds-v0"), GuessNumberParallel)
    assert isinstance(make("mrlm-test/TwoKinds-v0", kind="aec").unwrapped, GuessWordAEC)
