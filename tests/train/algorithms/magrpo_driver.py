"""Two MAGRPO (or IPPO) steps of two tiny policies (one per agent) on a scripted game, split over
the processes.

The game is ``Coordinate`` with two agents and two rounds (tests/train/rollout/scripted_multi.py).
Each policy's generator replies by rule: the reply to a prompt depends only on the prompt and on
which of the ``group_size`` samples of its task it is, never on which process plays the task or
what else is in the batch; its log-probs are the policy's own, scored one reply at a time, as a
sampler on those weights would record them. Task seeds go to the processes as the trainer hands
them out (one process taking seeds 0-3 per step, two taking 0, 2 and 1, 3), so one process and two
train on the same global batch of rows.

The step runs the trainer's own :func:`~mrlm.train.algorithms.multi_agent.train_step`: team
credit, group advantages, each policy on its own agent's rows (the policies differ in size and
vocabulary), two passes over the batch, micro-batches of one row, optionally a frozen reference
per policy, and the loss averaged per sequence or per token (the processes hold different numbers
of tokens: only global normalisers give one process's loss). With ``--algorithm ippo`` the step is
:func:`~mrlm.train.algorithms.ippo.train_step` instead: each policy with a value head, GAE and
advantages whitened over every process's tokens, one mini-batch per process and pass. Each process writes ``<report-dir>/rank-<r>.json`` with the steps' metrics; process 0
also writes ``<report-dir>/weights.pt``, every trained weight of both policies.

Run ``python -m tests.train.algorithms.magrpo_driver --help`` from the repository root; under
``torchrun --nproc_per_node 2 -m ...`` for two processes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from mrlm.train.adapters import agent_adapters, base_references
from mrlm.train.algorithms import ippo, magrpo, multi_agent
from mrlm.train.algorithms.onpolicy import TaskSeeds
from mrlm.train.chat_template import IM_END
from mrlm.train.generation import Completion, SamplingParams
from mrlm.train.generation.logprobs import token_logprobs
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.distributed import exit_process
from mrlm.train.loop.fsdp import full_state_dict
from mrlm.train.policy import ModelConfig
from mrlm.train.rollout import Policy, RolloutEngine
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer
from mrlm.train.value import PolicyWithValueHead, causal_lm
from tests.train.rollout.scripted_multi import Coordinate

TASKS_PER_STEP = 4  # over all processes
GROUP_SIZE = 2
STEPS = 2
#: Metrics that measure time, not what was computed.
TIMINGS = ("tokens_per_s", "step_s", "rollout_s")


class ScriptedReplies:
    """A generator that replies by rule and scores its replies with ``model``.

    The ``k``-th copy of a prompt within one call is sample ``k mod group_size`` of its task (the
    engine batches a task's samples together); the reply is a digit 0-2 and up to three tokens,
    all drawn from a generator seeded by the prompt's tokens and the sample, then ``<|im_end|>``.
    """

    def __init__(self, model: torch.nn.Module, tokenizer: Any, group_size: int) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.group_size = group_size
        self.end_id = tokenizer.convert_tokens_to_ids(IM_END)

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        seen: dict[tuple[int, ...], int] = {}
        completions = []
        for prompt in prompts:
            key = tuple(prompt)
            k = seen[key] = seen.get(key, -1) + 1
            rng = random.Random(zlib.crc32(str(key).encode()) * self.group_size + k % self.group_size)
            ids = self.tokenizer.encode(str(rng.randrange(3)))
            ids += [rng.randrange(3, len(self.tokenizer)) for _ in range(rng.randrange(4))]
            ids.append(self.end_id)
            completions.append(Completion(ids, self._logprobs(list(prompt), ids, params), "stop"))
        return completions

    def _logprobs(self, prompt: list[int], reply: list[int], params: SamplingParams) -> list[float]:
        ids = torch.tensor([prompt + reply])
        mask = torch.tensor([[0] * len(prompt) + [1] * len(reply)])
        with torch.no_grad():
            logp = token_logprobs(self.model, ids, torch.ones_like(ids), mask, params.temperature or 1.0)
        return [float(value) for value in logp[0, len(prompt) :]]


def policies(kind: str = "per_agent") -> tuple[dict[str, Any], dict[str, Any]]:
    """Agent p0's policy (the default tiny model) and p1's (smaller, on a smaller vocabulary); with
    ``kind="lora"``, each agent's LoRA adapter (rank 4) of one default tiny base."""
    if kind == "lora":
        views, tokenizer = agent_adapters(ModelConfig(name_or_path="tiny", lora_r=4), ["p0", "p1"], seed=0)
        return dict(views), {"p0": tokenizer, "p1": tokenizer}
    tokenizers = {"p0": build_tiny_tokenizer(), "p1": build_tiny_tokenizer(vocab_size=384)}
    models = {
        "p0": build_tiny_model(tokenizers["p0"], seed=0),
        "p1": build_tiny_model(tokenizers["p1"], seed=1, hidden_size=32, num_heads=2, num_kv_heads=1),
    }
    return models, tokenizers


def trained_models(
    algorithm: str = "magrpo", kind: str = "per_agent"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`policies`, each with a value head for IPPO."""
    models, tokenizers = policies(kind)
    if algorithm == "ippo":
        models = {name: PolicyWithValueHead(model) for name, model in models.items()}
    return models, tokenizers


def run(
    output_dir: str,
    report_dir: str,
    strategy: str,
    kl_coef: float,
    aggregation: str,
    algorithm: str = "magrpo",
    kind: str = "per_agent",
) -> dict[str, Any]:
    models, tokenizers = trained_models(algorithm, kind)
    settings: dict[str, Any] = {
        "env_id": "coordinate",
        "policies": kind,
        "credit": "team",
        "group_size": GROUP_SIZE,
        "max_new_tokens": 8,
        "max_turns": 2,
        "kl_coef": kl_coef,
        "num_iterations": 2,
        "micro_batch_size": 1,
        "run": RunConfig(output_dir=output_dir, max_steps=STEPS, progress_bar=False),
        "optim": OptimConfig(learning_rate=1e-3),
    }
    config: magrpo.MAGRPOConfig | ippo.IPPOConfig
    if algorithm == "ippo":
        # One mini-batch per process and pass: the global batch is the one process's.
        config = ippo.IPPOConfig(**settings, kl_in=aggregation, mini_batch_size=TASKS_PER_STEP * GROUP_SIZE)  # type: ignore[arg-type]
    else:
        config = magrpo.MAGRPOConfig(**settings, aggregation=aggregation)  # type: ignore[arg-type]
    # Each policy's reference is its initial weights, as multi_agent.train loads them (with
    # adapters: the shared base with the adapters off).
    references = base_references(models) if kind == "lora" else policies(kind)[0]
    frozen = (
        {multi_agent.REFERENCE_PREFIX + name: model for name, model in references.items()}
        if kl_coef > 0
        else {}
    )
    with TrainingSession(
        models,
        frozen=frozen,
        run=config.run,
        optim=config.optim,
        dist=DistributedConfig(strategy=strategy),  # type: ignore[arg-type]
    ) as session:
        config.prompts_per_step = TASKS_PER_STEP // session.world_size
        engine = RolloutEngine(
            lambda: Coordinate(rounds=2),
            {
                name: Policy(
                    ScriptedReplies(causal_lm(session.unwrapped(name)), tokenizer, GROUP_SIZE), tokenizer
                )
                for name, tokenizer in tokenizers.items()
            },
            sampling=SamplingParams(max_new_tokens=config.max_new_tokens),
            env_id=config.env_id,
            max_turns=config.max_turns,
        )
        seeds = TaskSeeds(base=0, rank=session.rank, world_size=session.world_size)
        steps = []
        with engine:
            for _ in range(STEPS):
                if isinstance(config, ippo.IPPOConfig):
                    metrics = ippo.train_step(session, engine, seeds, config, tokenizers)
                else:
                    stats, extra = multi_agent.train_step(
                        session, engine, seeds, config, tokenizers, magrpo.advantages
                    )
                    metrics = {**dataclasses.asdict(stats), **extra}
                steps.append({key: value for key, value in metrics.items() if key not in TIMINGS})
        weights = {}
        for name, model in session.models.items():
            state = (
                full_state_dict(model) if session.strategy == "fsdp" else session.unwrapped(name).state_dict()
            )
            for key, value in state.items():
                weights[f"{name}/{key.removeprefix('module.')}"] = value.detach().cpu().clone()
        report = {"rank": session.rank, "step": session.step, "metrics": steps}
        Path(report_dir).mkdir(parents=True, exist_ok=True)
        (Path(report_dir) / f"rank-{session.rank}.json").write_text(json.dumps(report))
        if session.is_main_process:
            torch.save(weights, Path(report_dir) / "weights.pt")
    return report


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--report-dir", required=True)
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--kl-coef", type=float, default=0.0)
    parser.add_argument(
        "--aggregation", default="sequence_mean", help="MAGRPO's loss aggregation, or IPPO's kl_in"
    )
    parser.add_argument("--algorithm", choices=("magrpo", "ippo"), default="magrpo")
    parser.add_argument("--policies", default="per_agent", choices=["per_agent", "lora"])
    args = parser.parse_args(sys.argv[1:])
    run(
        args.output_dir,
        args.report_dir,
        args.strategy,
        args.kl_coef,
        args.aggregation,
        args.algorithm,
        args.policies,
    )
    exit_process(0)  # see its docstring: no interpreter teardown in a worker
