"""GRPO trains on Math-v0 served by ``mrlm-envs serve`` in another process, changing only the env id:
the run completes, its episodes are the server's, and its metrics equal those of the local run."""

from __future__ import annotations

import dataclasses
import json
import re
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mrlm.train.algorithms.grpo import GRPOConfig, train
from mrlm.train.loop import OptimConfig, RunConfig

#: Tasks whose answer is one digit, so that even the tiny untrained policy is sometimes right.
RECORDS = [{"question": f"Reply with the digit {d}.", "answer": f"#### {d}"} for d in range(10)]

#: Metrics that depend only on the seed, the model and the env (not on wall-clock time).
DETERMINISTIC = ("reward", "sampled_reward", "loss", "kl", "clip_fraction", "approx_kl", "groups_kept")


def _serve(log: Path) -> tuple[subprocess.Popen[str], str]:
    """``mrlm-envs serve`` on a free loopback port; returns the process and its address."""
    command = [
        sys.executable, "-m", "mrlm.envs.cli", "serve", "--envs", "mrlm/Math-v0",
        "--host", "127.0.0.1", "--port", "0", "--log-level", "info",
    ]  # fmt: skip
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 60.0)
    match = re.search(r"on (\S+:\d+) ", process.stdout.readline() if ready else "")
    if match is None:
        process.kill()
        raise AssertionError(f"the server did not start:\n{log.read_text()[-3000:]}")
    return process, match.group(1)


def _metrics(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_grpo_on_a_served_env_matches_the_local_run(tmp_path: Path) -> None:
    local = GRPOConfig(
        env_id="mrlm/Math-v0",
        env_kwargs=json.dumps({"records": RECORDS}),
        group_size=4,
        prompts_per_step=2,
        max_new_tokens=16,
        micro_batch_size=4,
        run=RunConfig(output_dir=str(tmp_path / "local"), max_steps=3, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-3),
    )
    train(local)

    log = tmp_path / "server.log"
    process, address = _serve(log)
    try:
        remote = dataclasses.replace(
            local,
            env_id=f"grpc://{address}/mrlm/Math-v0",
            run=dataclasses.replace(local.run, output_dir=str(tmp_path / "remote")),
        )
        final = train(remote)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0

    assert (Path(final) / "config.json").exists()  # the run completed and saved its model
    served = _metrics(tmp_path / "remote")
    expected = _metrics(tmp_path / "local")
    assert [row["step"] for row in served] == [1, 2, 3]
    for mine, theirs in zip(served, expected, strict=True):
        assert {key: mine[key] for key in DETERMINISTIC} == {key: theirs[key] for key in DETERMINISTIC}
    # Every episode ran on the server: one session per pooled env, each closed at the end, and one
    # more for the env the run starts (built and reset) before its model loads.
    server_log = log.read_text()
    opened = len(re.findall(r"session \w+ opened: mrlm/Math-v0 as gymnasium", server_log))
    assert opened == local.group_size * local.prompts_per_step + 1
    assert "stopped; closed 0 sessions" in server_log


@pytest.mark.slow
def test_ppo_over_two_turns_on_a_served_env_matches_the_local_run(tmp_path: Path) -> None:
    from mrlm.train.algorithms import ppo

    local = ppo.PPOConfig(
        env_id="mrlm/Math-v0",
        env_kwargs=json.dumps({"records": RECORDS, "max_turns": 2}),
        max_turns=2,
        prompts_per_step=4,
        max_new_tokens=8,
        mini_batch_size=2,
        micro_batch_size=2,
        run=RunConfig(output_dir=str(tmp_path / "local"), max_steps=2, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-3),
    )
    ppo.train(local)
    log = tmp_path / "server.log"
    process, address = _serve(log)
    try:
        remote = dataclasses.replace(
            local,
            env_id=f"grpc://{address}/mrlm/Math-v0",
            run=dataclasses.replace(local.run, output_dir=str(tmp_path / "remote")),
        )
        ppo.train(remote)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    served, expected = _metrics(tmp_path / "remote"), _metrics(tmp_path / "local")
    assert [row["step"] for row in served] == [1, 2]
    assert all("success/turn2" in row for row in served)  # episodes did reach a second turn
    for mine, theirs in zip(served, expected, strict=True):
        for key in ("reward", "loss", "value/loss", "reply_tokens"):
            assert mine[key] == pytest.approx(theirs[key], rel=1e-5, abs=1e-7), key
