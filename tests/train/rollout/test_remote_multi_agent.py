"""Multi-agent envs served over gRPC roll out as the same envs do locally: the remote clients are
PettingZoo envs, so only the env id changes and the rows are the same."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mrlm.envs.server import EnvServer, serve
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.rollout import RolloutEngine, Trajectory

HOSTED = ("mrlm/Writing-v0", "mrlm/Debate-v0")
KWARGS: dict[str, dict[str, Any]] = {"mrlm/Writing-v0": {"rounds": 2}, "mrlm/Debate-v0": {"rounds": 2}}
SAMPLING = SamplingParams(max_new_tokens=10, seed=2)


@pytest.fixture(scope="module")
def server() -> Iterator[EnvServer]:
    running = serve(envs=HOSTED, host="127.0.0.1", port=0)
    try:
        yield running
    finally:
        running.stop(grace_s=0)


def _collect(
    env_id: str, kwargs: dict[str, Any], kind: str, joint: str, model: Any, tokenizer: Any
) -> list[Trajectory]:
    engine = RolloutEngine(
        env_id,
        HFGenerator(model, tokenizer),
        tokenizer,
        SAMPLING,
        env_kwargs=kwargs,
        kind=kind,  # type: ignore[arg-type]
        joint=joint,  # type: ignore[arg-type]
        env_id="served",
        step_workers=2,
    )
    with engine:
        return engine.collect([0, 1], group_size=2)


@pytest.mark.parametrize("joint", ["align", "cross"])
@pytest.mark.parametrize("kind", ["aec", "parallel"])
@pytest.mark.parametrize("env_id", HOSTED)
def test_a_served_env_rolls_out_like_the_local_one(
    server: EnvServer, env_id: str, kind: str, joint: str, lively_model: Any, tokenizer: Any
) -> None:
    local = _collect(env_id, KWARGS[env_id], kind, joint, lively_model, tokenizer)
    served = _collect(
        f"grpc://{server.address}/{env_id}", KWARGS[env_id], kind, joint, lively_model, tokenizer
    )
    assert len(served) == len(local) >= 8
    assert served == local
    assert len(server.store) == 0  # every session was closed with the engine
