"""What a local env takes and returns, a remote one takes and returns the same: text with lone
surrogates (which UTF-8, and so a protobuf string, cannot hold) crosses as JSON; seeds the wire cannot
carry are refused naming the range; and a ``RemoteVectorEnv`` keeps up with the sub-envs a failed
batch still moved on."""

from __future__ import annotations

import gymnasium
import pytest

from mrlm.envs.remote import RemoteEnvFailure, RemoteVectorEnv
from mrlm.envs.remote.gym_env import RemoteEnv
from mrlm.proto.json_codec import decode_json, encode_json
from tests.envs.remote.probe_env import PROBE_ID

SURROGATE_TEXT = "say \ud800 and \udfff"


def test_json_escapes_lone_surrogates_and_decodes_them_back() -> None:
    for value in [SURROGATE_TEXT, {"k": ["\u00e9\udc00", 1]}, "plain \u00e9"]:
        text = encode_json(value)
        text.encode("utf-8")  # what a protobuf string needs
        assert decode_json(text) == value
    assert encode_json("plain \u00e9") == '"plain \u00e9"'  # other text stays as it is


def test_text_with_lone_surrogates_crosses_both_ways_as_locally(address: str) -> None:
    local, remote = gymnasium.make(PROBE_ID), RemoteEnv(address, PROBE_ID)
    try:
        for env in (local, remote):
            _, info = env.reset(seed=0, options={"note": SURROGATE_TEXT})
            assert info["options"] == {"note": SURROGATE_TEXT}
        local_step, remote_step = local.step(SURROGATE_TEXT), remote.step(SURROGATE_TEXT)
        assert remote_step[:2] == local_step[:2] == (f"echo {SURROGATE_TEXT}", float(len(SURROGATE_TEXT)))
    finally:
        local.close()
        remote.close()


def test_seeds_the_wire_cannot_carry_are_refused_naming_the_range(address: str) -> None:
    env = RemoteEnv(address, PROBE_ID)
    try:
        with pytest.raises(
            ValueError, match=r"seed must be an int in \[0, 2\*\*63\), got 9223372036854775808"
        ):
            env.reset(seed=2**63)  # a local env takes it; the protocol's seed is a signed 64-bit int
        observation, _ = env.reset(seed=2**63 - 1)
        assert observation == gymnasium.make(PROBE_ID).reset(seed=2**63 - 1)[0]
    finally:
        env.close()


@pytest.mark.parametrize("stream", [False, True])
def test_a_vector_env_goes_on_after_a_batch_that_failed_for_one_sub_env(address: str, stream: bool) -> None:
    # Sub-env 0's one-turn episode ends in the batch that fails for sub-env 1: the next step must
    # start its new episode (autoreset) rather than step it past its end.
    envs = RemoteVectorEnv(address, PROBE_ID, num_envs=2, stream=stream, max_turns=1)
    try:
        envs.reset(seed=0)
        with pytest.raises(RemoteEnvFailure, match="boom requested"):
            envs.step(["hello", "boom"])
        observations, rewards, terminations, _, _ = envs.step(["ignored", "again"])
        assert observations[0].startswith("probe ")  # a new episode's first observation
        assert (rewards[0], bool(terminations[0])) == (0.0, False)
        assert (observations[1], rewards[1], bool(terminations[1])) == ("echo again", 5.0, True)
        observations, rewards, _, _, _ = envs.step(["next", "ignored"])
        assert (observations[0], rewards[0]) == ("echo next", 4.0)
    finally:
        envs.close()
