"""MAGRPO with one policy per agent on two processes (torchrun, gloo on CPU): DDP and FSDP equal one
process on the whole batch, and a run resumes exactly, in one process and under FSDP from the CLI."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from mrlm.train.algorithms import magrpo
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.policy import ModelConfig
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny
from tests.train.algorithms.magrpo_driver import TIMINGS, trained_models
from tests.train.algorithms.magrpo_driver import run as run_driver
from tests.train.rollout.scripted_multi import Coordinate

ROOT = Path(__file__).resolve().parents[3]
DRIVER = "tests.train.algorithms.magrpo_driver"


def _env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACCELERATE_")}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _torchrun(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *args]
    return subprocess.run(
        command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300, check=False
    )


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Torch on one thread, like the torchrun workers: on a busy machine, threads that wait for each
    other make these tiny models many times slower (the results do not depend on it)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _assert_same_training(
    ours: dict[str, torch.Tensor],
    theirs: dict[str, torch.Tensor],
    algorithm: str = "magrpo",
    kind: str = "per_agent",
) -> None:
    """Each trained tensor moved from its initial value as in ``theirs``, up to 1e-3 of the move
    (different processes sum in different orders; two processes reach about 2e-5)."""
    initial = {
        f"{name}/{key}": value
        for name, model in trained_models(algorithm, kind)[0].items()
        for key, value in model.state_dict().items()
    }
    assert set(ours) == set(theirs) == set(initial)
    for key, value in theirs.items():
        moved = torch.linalg.vector_norm(value - initial[key])
        assert moved > 0, key
        assert torch.linalg.vector_norm(ours[key] - value) <= 1e-3 * moved, key


@pytest.mark.slow
@pytest.mark.parametrize(
    ("strategy", "kl_coef", "aggregation", "kind"),
    [
        ("ddp", 0.0, "token_mean", "per_agent"),
        ("fsdp", 0.1, "sequence_mean", "per_agent"),
        ("ddp", 0.1, "sequence_mean", "lora"),
    ],
)
def test_two_processes_match_one_process(
    strategy: str, kl_coef: float, aggregation: str, kind: str, tmp_path: Path
) -> None:
    """Two steps of two policies (of different sizes and vocabularies) on scripted two-round
    episodes, team credit, two passes over the batch in micro-batches of one row; under DDP the
    loss averaged over tokens (the processes hold different numbers), under FSDP a sharded
    reference per policy (KL in the loss): each process's metrics (every one but timings, per
    policy and per agent too) and both policies' trained weights equal those of one process on
    the whole batch. With ``kind="lora"`` the policies are two adapters of one tiny base, each
    view wrapped in DDP of its own, the reference the base with the adapters off."""
    with _one_thread():
        single = run_driver(
            str(tmp_path / "single"),
            str(tmp_path / "single-report"),
            "single",
            kl_coef,
            aggregation,
            kind=kind,
        )
    assert {"grad_norm/p1", "policy/p0/clip_fraction", "policy/p1/kl", "agent/p1/reward"} <= set(
        single["metrics"][0]
    )
    assert (single["metrics"][-1]["kl"] > 0) == (kl_coef > 0)
    args = ["-m", DRIVER, "--output-dir", str(tmp_path / "run"), "--report-dir", str(tmp_path / "reports")]
    args += [
        "--strategy",
        strategy,
        "--kl-coef",
        str(kl_coef),
        "--aggregation",
        aggregation,
        "--policies",
        kind,
    ]
    result = _torchrun(*args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    for rank in range(2):
        report: dict[str, Any] = json.loads((tmp_path / "reports" / f"rank-{rank}.json").read_text())
        assert report["step"] == 2
        for ours, theirs in zip(report["metrics"], single["metrics"], strict=True):
            assert set(ours) == set(theirs)
            for key, value in theirs.items():
                assert ours[key] == pytest.approx(value, rel=1e-4, abs=1e-6), (rank, key)
    _assert_same_training(
        torch.load(tmp_path / "reports" / "weights.pt"),
        torch.load(tmp_path / "single-report" / "weights.pt"),
        kind=kind,
    )


def _config(output_dir: Path, p1_model: Path, **run: Any) -> magrpo.MAGRPOConfig:
    return magrpo.MAGRPOConfig(
        env_id="coordinate",
        policies="per_agent",
        model=ModelConfig(name_or_path="tiny"),
        agent_models={"p1": str(p1_model)},
        group_size=2,
        prompts_per_step=2,
        max_new_tokens=6,
        max_turns=2,
        kl_coef=0.05,
        num_iterations=2,
        micro_batch_size=1,
        run=RunConfig(output_dir=str(output_dir), progress_bar=False, **run),
        optim=OptimConfig(learning_rate=1e-3),
    )


def _metrics(run_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize(("strategy", "kl_in"), [("ddp", "reward"), ("fsdp", "loss")])
def test_ippo_on_two_processes_matches_one_process(strategy: str, kl_in: str, tmp_path: Path) -> None:
    """IPPO, each policy with a value head, a reference per policy (the KL in the reward under
    DDP, in the loss under FSDP): GAE and advantage whitening over every process's tokens give
    each process the metrics (per agent too) and both policies and heads the weights of one
    process on the whole batch."""
    with _one_thread():
        single = run_driver(
            str(tmp_path / "single"), str(tmp_path / "single-report"), "single", 0.1, kl_in, "ippo"
        )
    assert {"value/p1/explained_variance", "policy/p0/loss", "grad_norm/p1"} <= set(single["metrics"][0])
    args = ["-m", DRIVER, "--output-dir", str(tmp_path / "run"), "--report-dir", str(tmp_path / "reports")]
    args += ["--strategy", strategy, "--kl-coef", "0.1", "--aggregation", kl_in, "--algorithm", "ippo"]
    result = _torchrun(*args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    for rank in range(2):
        report: dict[str, Any] = json.loads((tmp_path / "reports" / f"rank-{rank}.json").read_text())
        for ours, theirs in zip(report["metrics"], single["metrics"], strict=True):
            assert set(ours) == set(theirs)
            for key, value in theirs.items():
                assert ours[key] == pytest.approx(value, rel=1e-4, abs=1e-6), (rank, key)
    _assert_same_training(
        torch.load(tmp_path / "reports" / "weights.pt"),
        torch.load(tmp_path / "single-report" / "weights.pt"),
        "ippo",
    )


@pytest.mark.slow
def test_resume_continues_exactly(tmp_path: Path) -> None:
    """Four steps straight, and two steps then two more from the step-2 checkpoint (sampled
    rollouts, a reference per policy, p1 a smaller saved model): the same metrics at every step
    and the same final weights of each agent, each loadable with transformers."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = build_tiny_tokenizer(vocab_size=384)
    p1_model = save_tiny(
        tmp_path / "p1-start", build_tiny_model(tokenizer, seed=1, hidden_size=32), tokenizer
    )
    game = functools.partial(Coordinate, rounds=2)
    with _one_thread():
        straight = magrpo.train(_config(tmp_path / "straight", p1_model, max_steps=4), env=game)
        first = _config(tmp_path / "resumed", p1_model, max_steps=2, save_every=2)
        magrpo.train(first, env=game)
        resumed = dataclasses.replace(first, run=dataclasses.replace(first.run, max_steps=4, resume="latest"))
        final = magrpo.train(resumed, env=game)

    rows, again = _metrics(tmp_path / "straight"), _metrics(tmp_path / "resumed")
    assert [row["step"] for row in again] == [row["step"] for row in rows] == [1, 2, 3, 4]
    for ours, theirs in zip(again, rows, strict=True):
        assert set(ours) == set(theirs)
        for key, value in theirs.items():
            if key not in TIMINGS and key != "time":
                assert ours[key] == pytest.approx(value, rel=1e-6, abs=1e-9), (theirs["step"], key)
    assert sorted(path.name for path in final.iterdir()) == ["p0", "p1"]
    for agent in ("p0", "p1"):
        ours = AutoModelForCausalLM.from_pretrained(final / agent).state_dict()
        theirs = AutoModelForCausalLM.from_pretrained(straight / agent).state_dict()
        assert set(ours) == set(theirs)
        for key, value in theirs.items():
            torch.testing.assert_close(ours[key], value, rtol=0, atol=0, msg=f"{agent}/{key}")
        assert len(AutoTokenizer.from_pretrained(final / agent)) == (512 if agent == "p0" else 384)


ARGS = ["magrpo", "--env-id", "mrlm/TeamSum-v0", "--policies", "per_agent", "--group-size", "2"]
ARGS += ["--prompts-per-step", "1", "--max-new-tokens", "6", "--micro-batch-size", "1", "--kl-coef", "0.05"]
ARGS += ["--num-iterations", "2", "--run.save-every", "2", "--run.no-progress-bar", "--dist.strategy", "fsdp"]


@pytest.mark.slow
def test_the_cli_trains_under_fsdp_and_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    out = tmp_path / "run"
    cli = ["-m", "mrlm.train.cli", *ARGS, "--run.output-dir", str(out)]
    first = _torchrun(*cli, "--run.max-steps", "2")
    assert first.returncode == 0, first.stderr[-4000:]
    assert first.stdout.count("final models:") == 2
    agents = sorted(path.name for path in (out / "final").iterdir())
    assert len(agents) == 2
    resumed = _torchrun(*cli, "--run.max-steps", "4", "--run.resume", "latest")
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    rows = _metrics(out)
    assert [row["step"] for row in rows] == [1, 2, 3, 4]
    assert all(f"grad_norm/{agents[1]}" in row and f"agent/{agents[0]}/reward" in row for row in rows)
    for agent in agents:
        # Saved whole from the shards, loadable by transformers.
        assert AutoModelForCausalLM.from_pretrained(out / "final" / agent).config.model_type == "qwen2"
