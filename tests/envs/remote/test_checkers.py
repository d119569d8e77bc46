"""The official Gymnasium and PettingZoo checkers pass through the wire, and remote runs equal local ones."""

from __future__ import annotations

from typing import Any

import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import mrlm.envs
from mrlm.envs.remote import RemoteAECEnv, RemoteEnv, RemoteParallelEnv, RemoteVectorEnv
from mrlm.envs.server import EnvServer
from tests.envs.remote.probe_env import PROBE_ID

WORD = "mrlm-test/GuessWord-v0"
NUMBER = "mrlm-test/GuessNumber-v0"


def test_check_env_passes_on_remote_math(address: str) -> None:
    with RemoteEnv(address, "mrlm/Math-v0", level=2) as env:
        check_env(env)


def test_remote_spaces_equal_the_local_ones(address: str) -> None:
    local = mrlm.envs.make("mrlm/Math-v0")
    with RemoteEnv(address, "mrlm/Math-v0") as remote:
        assert remote.observation_space == local.observation_space
        assert remote.action_space == local.action_space
        assert remote.metadata["render_modes"] == local.metadata["render_modes"]
        assert remote.spec is not None and remote.spec.id == "mrlm/Math-v0"


def test_api_test_and_seed_test_pass_on_remote_aec(address: str) -> None:
    env = RemoteAECEnv(address, WORD, rounds=3)
    try:
        api_test(env, num_cycles=20)
    finally:
        env.close()
    seed_test(lambda: RemoteAECEnv(address, WORD, rounds=3), num_cycles=20)


def test_parallel_api_test_and_seed_test_pass_on_remote_parallel(address: str) -> None:
    env = RemoteParallelEnv(address, NUMBER, rounds=4)
    try:
        parallel_api_test(env, num_cycles=20)
    finally:
        env.close()
    parallel_seed_test(lambda: RemoteParallelEnv(address, NUMBER, rounds=4), num_cycles=20)


def test_multi_agent_spaces_are_built_once_and_equal_the_local_ones(address: str) -> None:
    local = mrlm.envs.make(NUMBER)
    with RemoteParallelEnv(address, NUMBER) as remote:
        assert remote.possible_agents == local.possible_agents
        for agent in local.possible_agents:
            assert remote.observation_space(agent) is remote.observation_space(agent)
            assert remote.observation_space(agent) == local.observation_space(agent)
            assert remote.action_space(agent) == local.action_space(agent)
        assert remote.max_num_agents == local.max_num_agents == 2


def _gym_rollout(env: Any, seed: int, actions: list[str]) -> list[Any]:
    steps: list[Any] = [env.reset(seed=seed)]
    for action in actions:
        step = env.step(action)
        steps.append(step)
        if step[2] or step[3]:
            break
    return steps


@pytest.mark.parametrize("seed", [0, 7])
def test_gymnasium_rollouts_equal_local_rollouts(address: str, seed: int) -> None:
    actions = ["\\boxed{3}", "no idea", "\\boxed{12}"]
    local = mrlm.envs.make("mrlm/Math-v0", level=2, max_turns=3)
    with RemoteEnv(address, "mrlm/Math-v0", level=2, max_turns=3) as remote:
        expected = _gym_rollout(local, seed, actions)
        got = _gym_rollout(remote, seed, actions)
    assert len(got) == len(expected) > 1
    for mine, theirs in zip(got, expected, strict=True):
        assert data_equivalence(mine, theirs, exact=True), (mine, theirs)


def test_aec_rollout_equals_local_rollout(address: str) -> None:
    local = mrlm.envs.make(WORD, rounds=2)
    with RemoteAECEnv(address, WORD, rounds=2) as remote:
        trace = []
        for env in (local, remote):
            env.reset(seed=5)
            seen = []
            for agent in env.agent_iter(40):
                observation, reward, terminated, truncated, info = env.last()
                # Rewards travel as doubles: PettingZoo's own int 0 comes back as 0.0.
                rewards = {name: float(value) for name, value in env.rewards.items()}
                seen.append((agent, observation, float(reward), terminated, truncated, info, rewards))
                env.step(None if terminated or truncated else ("ember" if len(seen) == 3 else "pear"))
            trace.append(seen)
        assert remote.agents == local.agents == []
    assert len(trace[0]) > 2
    assert data_equivalence(trace[1], trace[0], exact=True)


def test_parallel_rollout_equals_local_rollout_and_observations_are_in_space(address: str) -> None:
    local = mrlm.envs.make(NUMBER, rounds=3)
    with RemoteParallelEnv(address, NUMBER, rounds=3) as remote:
        runs = []
        for env in (local, remote):
            run: list[Any] = [env.reset(seed=11)]
            guess = 10
            while env.agents:
                step = env.step({agent: str(guess + i) for i, agent in enumerate(env.agents)})
                run.append(step)
                for agent, observation in step[0].items():
                    assert env.observation_space(agent).contains(observation)
                guess += 20
            runs.append(run)
    assert len(runs[0]) == 4
    assert data_equivalence(runs[1], runs[0], exact=True)


def test_make_with_a_remote_id_builds_the_client_of_the_native_or_asked_kind(server: EnvServer) -> None:
    base = f"grpc://{server.address}"
    env = mrlm.envs.make(f"{base}/mrlm/Math-v0", level=1)
    assert isinstance(env, RemoteEnv)
    env.close()
    word = mrlm.envs.make(f"{base}/{WORD}")
    assert isinstance(word, RemoteAECEnv)
    word.close()
    number = mrlm.envs.make(f"{base}/{NUMBER}", kind="parallel", rounds=2)
    assert isinstance(number, RemoteParallelEnv)
    number.close()
    entry = mrlm.envs.env_entry(f"{base}/{WORD}")
    assert entry.kinds == ("aec",) and entry.description == mrlm.envs.env_entry(WORD).description
    assert len(server.store) == 0  # every client released its session


def test_options_and_infos_round_trip_exactly(address: str) -> None:
    local = mrlm.envs.make(PROBE_ID)
    with RemoteEnv(address, PROBE_ID) as remote:
        options = {"flag": True, "none": None, "ratio": 1.0, "count": 3, "deep": {"x": [1, "a"]}}
        assert data_equivalence(
            remote.reset(seed=3, options=options), local.reset(seed=3, options=options), exact=True
        )
        _, info = remote.reset(seed=3, options=options)
        assert type(info["options"]["ratio"]) is float and type(info["options"]["count"]) is int
        assert info["options"]["flag"] is True and info["options"]["none"] is None


def test_reset_options_that_are_no_mapping_are_named_as_a_local_env_names_them(address: str) -> None:
    with pytest.raises(TypeError, match="got list") as local:
        mrlm.envs.make(PROBE_ID).reset(options=[1])
    no_mapping: Any = [1]
    number_keys: Any = {1: 2}
    vector = RemoteVectorEnv(address, PROBE_ID, 2)
    with RemoteEnv(address, PROBE_ID) as remote:
        for client in (remote, vector):
            with pytest.raises(TypeError) as refused:
                client.reset(seed=1, options=no_mapping)
            assert str(refused.value) == str(local.value)
            with pytest.raises(TypeError, match="reset option names must be text"):
                client.reset(seed=1, options=number_keys)
        assert data_equivalence(remote.reset(seed=3), mrlm.envs.make(PROBE_ID).reset(seed=3), exact=True)
        vector.reset(seed=3)
    vector.close()


def test_joint_actions_that_are_no_mapping_and_unknown_agents_are_named_as_locally(address: str) -> None:
    def refusals(parallel: Any, aec: Any) -> list[str]:
        parallel.reset(seed=1)
        aec.reset(seed=1)
        said = []
        for call in (lambda: parallel.step(["7"]), lambda: parallel.step(None), lambda: aec.observe("ghost")):
            with pytest.raises((TypeError, KeyError)) as refused:
                call()
            said.append(f"{refused.type.__name__}: {refused.value}")
        parallel.close()
        aec.close()
        return said

    local = refusals(mrlm.envs.make(NUMBER, kind="parallel"), mrlm.envs.make(WORD, kind="aec"))
    remote = refusals(RemoteParallelEnv(address, NUMBER), RemoteAECEnv(address, WORD))
    assert remote == local
    assert local[0] == "TypeError: step() takes a dict of each live agent's action, got list"
    assert local[2].startswith("KeyError: \"no agent 'ghost' in this env; its agents are [")


def test_render_ansi_and_human(address: str, capsys: pytest.CaptureFixture[str]) -> None:
    local = mrlm.envs.make(PROBE_ID, render_mode="ansi")
    first, _ = local.reset(seed=1)
    local.step("hello")
    with RemoteEnv(address, PROBE_ID, render_mode="ansi") as env:
        env.reset(seed=1)
        env.step("hello")
        assert env.render() == local.render() == f"[env]\n{first}\n[agent]\nhello\n[env]\necho hello\n"
    printed = []
    for human in (
        mrlm.envs.make(PROBE_ID, render_mode="human"),
        RemoteEnv(address, PROBE_ID, render_mode="human"),
    ):
        human.reset(seed=1)
        human.step("hello")
        during = capsys.readouterr().out
        assert human.render() is None
        printed.append((during, capsys.readouterr().out))
        human.close()
    # Local, then remote: the lines as they come, then the transcript on render(), printed here
    transcript = f"[env]\n{first}\n[agent]\nhello\n[env]\necho hello\n"
    assert printed == [(transcript, transcript + "\n")] * 2
