"""The multi-agent base classes, checked by PettingZoo's own test suite and by hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, parallel_seed_test, seed_test
from pettingzoo.utils import parallel_to_aec

from mrlm.envs import GameAECEnv, GameParallelEnv, Outcome, play_in_turn
from tests.envs.toy_games import GuessNumberParallel, GuessWordAEC, as_module


def test_aec_base_passes_api_and_seed_tests() -> None:
    api_test(GuessWordAEC(), num_cycles=60)
    api_test(GuessWordAEC(num_agents=3), num_cycles=60)
    seed_test(lambda: GuessWordAEC(), num_cycles=30)


def test_parallel_base_passes_api_and_seed_tests() -> None:
    parallel_api_test(GuessNumberParallel(), num_cycles=60)
    parallel_seed_test(lambda: GuessNumberParallel(num_agents=3))


def test_max_cycles_truncates_both_apis() -> None:
    # Random actions can name the secret; only max_cycles may end these episodes.
    module = as_module(
        lambda **kw: parallel_to_aec(GuessNumberParallel(rounds=100, stop_on_exact=False, **kw)),
        lambda **kw: GuessNumberParallel(rounds=100, stop_on_exact=False, **kw),
    )
    max_cycles_test(module)


def test_aec_max_cycles_counts_full_rounds() -> None:
    env = GuessWordAEC(rounds=100, num_agents=3, max_cycles=4)
    env.reset(seed=0)
    moves = {agent: 0 for agent in env.possible_agents}
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            assert truncated and not terminated
            env.step(None)
            continue
        moves[agent] += 1
        env.step("zzzzz")
    assert moves == {agent: 4 for agent in env.possible_agents}
    assert env.agents == []


def test_aec_last_returns_rewards_accumulated_since_the_agent_last_acted() -> None:
    env = GuessWordAEC()
    env.reset(seed=5)
    env.step("wrong")  # player_0: -0.01 to itself
    assert env.agent_selection == "player_1"
    env.step(env.secret)  # player_1 wins: +1 to itself, -1 to player_0
    # player_0 is stepped next (dead step order). Since its move began it got -0.01 (its own move)
    # and -1 (player_1's win): last() gives the sum, -1.01.
    _, reward, terminated, _, _ = env.last()
    assert env.agent_selection == "player_0"
    assert terminated is True
    assert reward == pytest.approx(-1.01, abs=1e-12)
    env.step(None)
    _, reward, terminated, _, info = env.last()
    assert env.agent_selection == "player_1"
    assert reward == pytest.approx(1.0)
    assert info == {"won": True}
    env.step(None)
    assert env.agents == []


def test_aec_flags_are_python_bools_and_infos_fresh() -> None:
    env = GuessWordAEC()
    env.reset(seed=1)
    first = env.infos["player_0"]
    first["hint"] = "mutated"
    env.reset(seed=1)
    assert env.infos["player_0"]["hint"] != "mutated"
    env.step("guess")
    assert all(type(v) is bool for v in env.terminations.values())
    assert all(type(v) is bool for v in env.truncations.values())


def test_aec_rejects_bad_actions_without_moving() -> None:
    env = GuessWordAEC()
    env.reset(seed=0)
    with pytest.raises(TypeError, match="must be a str"):
        env.step(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_action_length"):
        env.step("x" * 70_000)
    assert env.agent_selection == "player_0"


def test_parallel_step_validates_the_joint_action() -> None:
    env = GuessNumberParallel()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"missing \['player_1'\]"):
        env.step({"player_0": "1"})
    with pytest.raises(ValueError, match=r"not live \['ghost'\]"):
        env.step({"player_0": "1", "player_1": "2", "ghost": "3"})


def test_parallel_agents_emptied_and_step_after_end_raises() -> None:
    env = GuessNumberParallel(rounds=2)
    env.reset(seed=0)
    env.step({"player_0": "1", "player_1": "2"})
    _, _, terminations, truncations, _ = env.step({"player_0": "1", "player_1": "2"})
    assert terminations == {"player_0": True, "player_1": True}
    assert truncations == {"player_0": False, "player_1": False}
    assert env.agents == []
    with pytest.raises(RuntimeError, match="no live agents"):
        env.step({})


def test_parallel_rewards_follow_the_rules() -> None:
    env = GuessNumberParallel()
    env.reset(seed=0)
    secret = env.secret
    _, rewards, _, _, infos = env.step({"player_0": str(secret), "player_1": str((secret + 50) % 100)})
    assert rewards == {"player_0": 1.0, "player_1": 0.0}
    assert infos["player_0"] == {"distance": 0, "exact": True}


def test_spaces_are_the_same_object_every_call() -> None:
    for env in (GuessWordAEC(), GuessNumberParallel()):
        assert env.observation_space("player_0") is env.observation_space("player_0")
        assert env.action_space("player_1") is env.action_space("player_1")


def test_render_ansi_shows_the_transcript() -> None:
    env = GuessNumberParallel(render_mode="ansi")
    env.reset(seed=0)
    env.step({"player_0": "12", "player_1": "34"})
    assert env.render() == "[player_0]\n12\n[player_1]\n34\n"


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="distinct"):
        GuessWordAEC(num_agents=0)
    with pytest.raises(ValueError, match="max_cycles"):
        GuessNumberParallel(max_cycles=0)
    with pytest.raises(ValueError, match="render_mode"):
        GuessNumberParallel(render_mode="rgb_array")


# Games: one set of rules, both forms -----------------------------------------------------------------


class _TallyGame:
    """Each agent names a number once; each is paid its own number, and the total is noted at the end."""

    agents = ("a", "b")

    def __init__(self, picture: str | None = None) -> None:
        self.picture = picture
        self.said: dict[str, int] = {}
        self.seed: int | None = None

    def start(self, rng: Any, seed: int | None, options: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        self.said, self.seed = {}, seed
        return {agent: {"seed": seed} for agent in self.agents}

    def observe(self, agent: str) -> str:
        return f"said so far: {len(self.said)}"

    def move(self, agent: str, action: str) -> Outcome:
        self.said[agent] = len(action)
        done = len(self.said) == len(self.agents)
        infos: dict[str, dict[str, Any]] = {agent: {"said": len(action)}}
        if agent != "a":
            infos["a"] = {"last": agent}  # news for another agent, merged into its own info
        notes = [("total", str(sum(self.said.values())))] if done else []
        return Outcome({agent: float(len(action))}, done, infos, notes)

    def play(self, actions: Mapping[str, str]) -> Outcome:
        return play_in_turn(self, actions)

    def render(self) -> str | None:
        return self.picture


def test_play_in_turn_merges_the_moves_in_agent_order() -> None:
    game = _TallyGame()
    outcome = play_in_turn(game, {"b": "xyz", "a": "x"})
    assert outcome.rewards == {"a": 1.0, "b": 3.0} and outcome.done
    assert outcome.infos == {"a": {"said": 1, "last": "b"}, "b": {"said": 3}}
    assert list(outcome.notes) == [("total", "4")]


def test_both_forms_of_one_game_pass_the_checkers_and_agree() -> None:
    api_test(GameAECEnv(_TallyGame()), num_cycles=10)
    parallel_api_test(GameParallelEnv(_TallyGame()), num_cycles=10)
    parallel = GameParallelEnv(_TallyGame(), render_mode="ansi")
    _, infos = parallel.reset(seed=7)
    assert infos == {"a": {"seed": 7}, "b": {"seed": 7}} and parallel.game.seed == 7
    _, rewards, terminations, _, _ = parallel.step({"a": "xx", "b": "y"})
    assert rewards == {"a": 2.0, "b": 1.0} and all(terminations.values())
    assert parallel.render() == "[a]\nxx\n[b]\ny\n[total]\n3\n"  # the note follows the moves
    aec = GameAECEnv(_TallyGame(), render_mode="ansi")
    aec.reset(seed=7)
    aec.step("xx")
    aec.step("y")
    assert aec.render() == parallel.render()
    assert GameAECEnv(_TallyGame("the game's own picture"), render_mode="ansi").render() == (
        "the game's own picture"
    )
