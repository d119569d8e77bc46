"""Online DPO: DPO on pairs made from the current policy's own rollouts of an env.

Every ``resample_every`` steps a *round* of rollouts is collected and turned into pairs, which the
following steps train on with DPO's loss (:mod:`mrlm.train.algorithms.dpo`):

1. **rollout**: ``prompts_per_round`` tasks per process (env seeds), ``group_size`` sampled episodes
   each, all reset with the task's seed, so a group answers one task;
2. **pairs**: in each group the episode with the highest total reward is *chosen* and the one with
   the lowest *rejected*, when the gap is at least ``min_reward_gap``; groups without such a gap
   give no pair. A round that yields no pair on a process samples more tasks, up to
   ``max_sampling_rounds`` times; a later round left without pairs keeps training on the last
   round's pairs, and a first one fails with an error naming what to change;
3. **update**: each step takes ``batch_size / processes`` pairs of the process's round in a seeded
   order (cycling when the round has fewer) and runs :func:`~mrlm.train.algorithms.dpo.preference_step`:
   ``L = mean over pairs of loss(beta * (s_c - s_r))``, ``s`` the log-ratio to a frozen copy of the
   initial policy (``reference="model"``) or the log-prob itself (``"none"``);
4. **logging**: DPO's metrics plus the round's mean reward (``reward``), the pairs available
   (``round/pairs``) and the share of groups with a gap (``round/groups_with_gap``); checkpoints hold
   the round's pairs, so a resumed run continues on the same pairs and collects the same next round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mrlm.train.algorithms.dpo import (
    REFERENCE,
    PreferenceSettings,
    adapters_off,
    load_reference,
    preference_step,
    reference_for,
)
from mrlm.train.algorithms.onpolicy import (
    Engine,
    TaskSeeds,
    check_rollout_envs,
    check_rollout_settings,
    rollout_for,
)
from mrlm.train.algorithms.sft import EpochSampler
from mrlm.train.dpo import PreferencePair
from mrlm.train.generation import HFGenerator
from mrlm.train.loop import RunConfig, TrainingSession
from mrlm.train.loop.output_dir import check_output_dir
from mrlm.train.policy import load_policy
from mrlm.train.rollout import Trajectory
from mrlm.train.setting_checks import check_counts, check_positive
from mrlm.train.sft.example import SFTExample


class NoPreferencePairsError(RuntimeError):
    """No group of the first round had a reward gap, so there is nothing to prefer."""


@dataclass
class OnlineDPOConfig(PreferenceSettings):
    """Everything one online DPO run needs: flags, or --config FILE (YAML, the same keys)."""

    env_id: str = "mrlm/Math-v0"
    """Environment id (``mrlm-envs list``), local or remote."""
    env_kwargs: str = "{}"
    """The env's keyword arguments as a JSON object, such as '{"level": 1}'."""
    env_mixture: str = ""
    """Several envs at once, replacing env_id and env_kwargs (see mrlm.train.mixture)."""
    group_size: int = 4
    """Episodes per task; the best and the worst of them make the task's pair."""
    prompts_per_round: int = 16
    """Tasks per round and process."""
    resample_every: int = 4
    """Steps trained on one round's pairs before the next round is collected."""
    min_reward_gap: float = 1e-6
    """Smallest gap between a group's best and worst total reward that makes a pair."""
    max_sampling_rounds: int = 4
    """Rollout rounds tried per resampling before keeping the last round's pairs."""
    batch_size: int = 8
    """Pairs per optimizer step, over all processes (a multiple of the number of processes)."""
    max_new_tokens: int = 64
    """Longest reply, in tokens."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts."""
    top_p: float = 1.0
    """Nucleus sampling threshold."""
    max_turns: int = 1
    """Replies per episode after which the rollout stops (multi-turn envs)."""
    ignore_stop: bool = False
    """Never stop a reply at a stop token (benchmarks)."""
    run: RunConfig = field(default_factory=lambda: RunConfig(output_dir="runs/online_dpo", max_steps=50))
    """Output directory, steps, seed, checkpoints, logging."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.reference == "precomputed":
            raise ValueError("online DPO scores fresh pairs every round: use reference='model' or 'none'")
        if self.group_size < 2:
            raise ValueError(
                f"group_size must be at least 2 (a pair needs two replies), got {self.group_size}"
            )
        check_rollout_settings(self)
        check_counts(
            prompts_per_round=self.prompts_per_round,
            resample_every=self.resample_every,
            max_sampling_rounds=self.max_sampling_rounds,
            batch_size=self.batch_size,
        )
        check_positive(min_reward_gap=self.min_reward_gap)  # nan or inf: no group would ever make a pair


@dataclass
class Round:
    """One round's pairs on this process and where training stands in them."""

    index: int
    pairs: list[PreferencePair]
    sampler: EpochSampler
    metrics: dict[str, float]


def train(config: OnlineDPOConfig) -> Path:
    """Run online DPO as configured; return the directory of the final model (``save_pretrained`` format)."""
    check_output_dir(config.run.output_dir)  # before the model loads, which may take minutes
    check_rollout_envs(config)  # an unknown id, a server not there, an env that cannot start: as early
    model, tokenizer = load_policy(config.model, chat=True, seed=config.run.seed)
    copy = config.reference == "model" and not adapters_off(config)
    frozen = {REFERENCE: load_reference(config)} if copy else {}
    with TrainingSession.for_config(config, model, frozen=frozen) as session:
        if config.batch_size % session.world_size:
            raise ValueError(
                f"batch_size ({config.batch_size}) must be a multiple of the number of processes ({session.world_size})"
            )
        generator = HFGenerator(session.unwrapped_model, tokenizer)
        engine, seeds = rollout_for(config, session, generator, tokenizer)
        reference = reference_for(config, session)
        current: Round | None = None
        state = session.restore()
        if state:
            seeds.cursor = int(state["seed_cursor"])
            engine.load_state_dict(state["engine"])
            current = _round_from_state(state["round"], session, config)
        with engine:
            while session.step < config.run.max_steps:
                if current is None or session.step % config.resample_every == 0:
                    current = next_round(session, engine, seeds, config, current)
                share = [current.pairs[i] for i in current.sampler.next_batch()]
                metrics = preference_step(
                    session,
                    share,
                    config,
                    pad_token_id=tokenizer.pad_token_id,
                    reference=reference,
                )
                session.log({**metrics, **current.metrics})
                session.maybe_save(
                    {
                        "seed_cursor": seeds.cursor,
                        "engine": engine.state_dict(),
                        "round": _round_state(current),
                    }
                )
        return session.save_final(tokenizer)


def next_round(
    session: TrainingSession, engine: Engine, seeds: TaskSeeds, config: OnlineDPOConfig, last: Round | None
) -> Round:
    """Phases 1-2: roll out with the current policy and pair the best and worst reply of each group."""
    pairs: list[PreferencePair] = []
    rewards: list[float] = []
    groups = groups_with_gap = 0
    with session.generation_mode():
        for _ in range(config.max_sampling_rounds):
            trajectories = engine.collect(seeds.take(config.prompts_per_round), config.group_size)
            rewards += [t.total_reward for t in trajectories]
            found = best_worst_pairs(
                trajectories, config.group_size, config.min_reward_gap, config.max_length
            )
            groups += len(trajectories) // config.group_size
            groups_with_gap += len(found)
            pairs += found
            if pairs:
                break
    have = [bool(pairs)] if session.world_size == 1 else session.gather_object(bool(pairs))
    index = 0 if last is None else last.index + 1
    metrics = {
        "reward": session.all_reduce_mean(sum(rewards) / len(rewards)),
        "round/pairs": session.all_reduce_mean(float(len(pairs))) * session.world_size,
        "round/groups_with_gap": session.all_reduce_mean(groups_with_gap / max(groups, 1)),
    }
    if not all(have):
        if last is None:
            raise NoPreferencePairsError(
                f"no group of {config.group_size} replies had a reward gap of {config.min_reward_gap} in "
                f"{config.max_sampling_rounds} rounds of {config.prompts_per_round} tasks; warm the model up "
                "(SFT), raise group_size or temperature, or use an env with graded rewards"
            )
        return Round(index, last.pairs, last.sampler, metrics)  # keep training on the last round's pairs
    per_process = config.batch_size // session.world_size
    return Round(
        index, pairs, EpochSampler(len(pairs), per_process, seed=session.seed + 7919 * index), metrics
    )


def best_worst_pairs(
    trajectories: Sequence[Trajectory], group_size: int, min_gap: float, max_length: int
) -> list[PreferencePair]:
    """One pair per group of ``group_size`` consecutive trajectories whose best and worst total
    rewards differ by at least ``min_gap`` (the first best and the first worst on ties); each side
    is the whole episode as the policy saw it, its own replies scored, cut to ``max_length`` tokens."""
    pairs = []
    for start in range(0, len(trajectories), group_size):
        group = trajectories[start : start + group_size]
        best = max(group, key=lambda t: t.total_reward)
        worst = min(group, key=lambda t: t.total_reward)
        if best.total_reward - worst.total_reward < min_gap:
            continue
        chosen, rejected = (SFTExample(t.token_ids, t.mask).truncated(max_length) for t in (best, worst))
        if chosen.num_targets and rejected.num_targets:
            pairs.append(PreferencePair(chosen, rejected))
    return pairs


def _round_state(current: Round) -> dict[str, Any]:
    return {
        "index": current.index,
        "cursor": current.sampler.cursor,
        "seed": current.sampler.seed,
        "pairs": [
            [p.chosen.input_ids, p.chosen.labels_mask, p.rejected.input_ids, p.rejected.labels_mask]
            for p in current.pairs
        ],
        "metrics": current.metrics,
    }


def _round_from_state(state: dict[str, Any], session: TrainingSession, config: OnlineDPOConfig) -> Round:
    pairs = [PreferencePair(SFTExample(a, b), SFTExample(c, d)) for a, b, c, d in state["pairs"]]
    sampler = EpochSampler(len(pairs), config.batch_size // session.world_size, seed=int(state["seed"]))
    sampler.cursor = int(state["cursor"])
    return Round(int(state["index"]), pairs, sampler, dict(state["metrics"]))
