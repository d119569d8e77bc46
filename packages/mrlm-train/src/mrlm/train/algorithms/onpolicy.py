"""The parts of one on-policy training step that every RL algorithm shares.

An algorithm's step is: rollout (its :class:`~mrlm.train.rollout.RolloutEngine`), scoring and
advantages (pure estimators of :mod:`mrlm.train.ops`), then :func:`update`, which takes the
algorithm's loss of one micro-batch and does the rest, correctly across processes:

* the update is one *training step* of the session (see
  :meth:`~mrlm.train.loop.TrainingSession.training_step`) made of ``num_iterations`` optimizer
  steps, each over the whole batch in micro-batches;
* every process runs the same number of forward and backward passes: one with fewer micro-batches
  (dynamic sampling may leave processes with different batch sizes) repeats its first one with
  weight 0, so FSDP's collectives always line up and nothing hangs;
* normalisers are global: the loss of a micro-batch is divided by this process's share of the
  *global* number of sequences or tokens (``global / world_size``), so once DDP or FSDP average the
  gradients over processes, every token or sequence of the global batch weighs the same, as in a
  one-process run on the whole batch.

:func:`rollout_metrics` gives the metrics every run logs about its replies (see docs/training.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from mrlm.train.generation import SamplingParams
from mrlm.train.generation.base import check_sampling
from mrlm.train.loop import RunConfig, TrainingSession
from mrlm.train.loop.cpu_threads import independent_cpu_models, side_by_side
from mrlm.train.mixture import EnvMixture, MixedRolloutEngine, parse_mixture
from mrlm.train.rollout import RolloutBatch, RolloutEngine, Trajectory
from mrlm.train.rollout.envs import check_env_id, env_factory, started_env
from mrlm.train.setting_checks import check_counts
from mrlm.train.task_seeds import training_seed_base

#: What an on-policy algorithm rolls out with: one env's engine, or a mixture's.
Engine = RolloutEngine | MixedRolloutEngine


@dataclass(frozen=True)
class Normalisers:
    """This process's share of the global batch's size, for :func:`mrlm.train.ops.policy_loss.aggregate`.

    Attributes:
        num_sequences: global number of trajectories / world size.
        num_tokens: global number of trained (masked) tokens / world size.
        global_sequences, global_tokens: the global counts themselves.
    """

    num_sequences: float
    num_tokens: float
    global_sequences: float
    global_tokens: float


#: The loss of one micro-batch: ``loss_fn(micro, rows, normalisers) -> (scalar loss, stats)``, where
#: ``rows`` selects the micro-batch's rows of per-row tensors the algorithm holds (advantages,
#: reference log-probs) and the loss is already divided by the normalisers it uses.
LossFn = Callable[[RolloutBatch, "Rows", Normalisers], tuple[torch.Tensor, dict[str, float]]]

#: Rows of a batch given to a loss: a slice, or an index tensor when :func:`update` shuffles.
Rows = slice | torch.Tensor


@dataclass(frozen=True)
class UpdateStats:
    """What :func:`update` reports, averaged over processes.

    Attributes:
        loss: the mean over iterations of the batch's loss (sum of its micro-batch losses, of
            every part).
        extras: each per-token stat the loss returned (a mean over its micro-batch's tokens),
            averaged over every token of every iteration, part and process: the value one process
            would report for the whole batch in one piece.
        grad_norm: gradient norm before clipping, of the first model, averaged over iterations.
        lr: the learning rate of the first model in this step.
        optimizer: every value :meth:`~mrlm.train.loop.TrainingSession.optimizer_step` returned at
            the last iteration (``grad_norm/<name>``, ``lr/<name>`` of other models).
        normalisers: the global counts of the whole batch (of the first part).
        iterations: passes over the batch run (fewer than asked when ``stop`` ended them).
        parts: with :func:`update_parts`, each part's ``extras`` and ``normalisers``, by part name.
    """

    loss: float
    extras: dict[str, float]
    grad_norm: float
    lr: float
    optimizer: dict[str, float]
    normalisers: Normalisers
    iterations: int = 1
    parts: dict[str, PartStats] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class PartStats:
    """One part's share of :class:`UpdateStats`: its token-weighted extras and its global counts."""

    extras: dict[str, float]
    normalisers: Normalisers


@dataclass(frozen=True)
class Part:
    """What one model (or one set of rows) brings to an update: its batch and its micro-batch loss.

    Several parts train together in :func:`update_parts`, each model on its own rows (one policy
    per agent, each with its tokenizer): every micro-batch step adds the losses of every part and
    runs one backward, and one optimizer step updates every model. Parts that name their ``model``,
    when those are separate models on CPU in a single process, run their forward and backward side
    by side instead (:func:`~mrlm.train.loop.cpu_threads.side_by_side`; the same gradients, as no
    parameter gets gradient from two parts).
    """

    batch: RolloutBatch
    loss_fn: LossFn
    model: torch.nn.Module | None = None
    """The one trainable model this part's loss trains, if it trains only one."""


def normalisers(session: TrainingSession, batch: RolloutBatch) -> Normalisers:
    """Global sequence and token counts of the batch every process holds a part of. Collective."""
    return _global_counts(session, float(batch.mask.shape[0]), float(batch.mask.sum()))


def _global_counts(session: TrainingSession, sequences: float, tokens: float) -> Normalisers:
    local = torch.tensor([sequences, tokens], dtype=torch.float64)
    totals = [float(value) for value in _all_reduce_sum(local, session)]
    world = session.world_size
    return Normalisers(totals[0] / world, totals[1] / world, totals[0], totals[1])


#: Decides after each pass over the batch whether to stop: it gets that pass's extras (as
#: :attr:`UpdateStats.extras`, global), e.g. to stop PPO's epochs once the approximate KL is too large.
StopFn = Callable[[dict[str, float]], bool]


def update(
    session: TrainingSession,
    batch: RolloutBatch,
    loss_fn: LossFn,
    *,
    micro_batch_size: int,
    num_iterations: int = 1,
    mini_batch_size: int | None = None,
    shuffle: torch.Generator | None = None,
    stop: StopFn | None = None,
) -> UpdateStats:
    """One training step: ``num_iterations`` passes over ``batch`` (see the module docstring).
    Collective: every process calls it, each with its own part of the batch.

    Each pass is one optimizer step over the whole batch (GRPO), or, with ``mini_batch_size``, one
    per mini-batch of that many of this process's trajectories (PPO's epochs of mini-batches), the
    loss of each normalised by the mini-batch's global counts. ``shuffle`` draws a new order of the
    trajectories for every pass (else they keep theirs); ``rows`` given to ``loss_fn`` are then
    index tensors into ``batch``. ``stop``, when given, ends the passes early.

    Raises:
        ValueError: an empty batch, or a micro-batch size, mini-batch size or iteration count below 1.
    """
    return update_parts(
        session,
        {"": Part(batch, loss_fn)},
        micro_batch_size=micro_batch_size,
        num_iterations=num_iterations,
        mini_batch_size=mini_batch_size,
        shuffle=shuffle,
        stop=stop,
    )


def update_parts(
    session: TrainingSession,
    parts: Mapping[str, Part],
    *,
    micro_batch_size: int,
    num_iterations: int = 1,
    mini_batch_size: int | None = None,
    shuffle: torch.Generator | None = None,
    stop: StopFn | None = None,
) -> UpdateStats:
    """:func:`update` of several parts at once (see :class:`Part`), each normalised by its own
    global counts, as if each were trained alone; the parts' ``i``-th micro-batches run together.
    Every process must give the same part names, each with at least one trajectory.
    """
    if not parts:
        raise ValueError("update needs at least one part")
    if any(int(part.batch.mask.shape[0]) == 0 for part in parts.values()):
        raise ValueError("update needs at least one trajectory of every part on every process")
    check_counts(micro_batch_size=micro_batch_size, num_iterations=num_iterations)
    if mini_batch_size is not None:
        check_counts(mini_batch_size=mini_batch_size)
    whole = {name: normalisers(session, part.batch) for name, part in parts.items()}
    losses: list[float] = []
    extras: _Sums = {}
    optimizer: dict[str, float] = {}
    grad_norms: list[float] = []
    lr = math.nan
    with session.training_step():
        for _ in range(num_iterations):
            minis: dict[str, list[Rows]] = {}
            for name, part in parts.items():
                size = int(part.batch.mask.shape[0])
                order = torch.randperm(size, generator=shuffle) if shuffle is not None else None
                chunk = size if mini_batch_size is None else mini_batch_size
                minis[name] = [
                    _rows(order, start, min(start + chunk, size)) for start in range(0, size, chunk)
                ]
            count = max(len(rows) for rows in minis.values())
            if mini_batch_size is not None:
                count = max(int(value) for value in session.gather_object(count))
            loss_sum = 0.0
            pass_extras: _Sums = {}
            for m in range(count):
                # A part with fewer mini-batches repeats its first one with weight 0 (see below).
                chosen: dict[str, _Chosen] = {}
                for name, part in parts.items():
                    rows, weight = (minis[name][m], 1.0) if m < len(minis[name]) else (minis[name][0], 0.0)
                    if mini_batch_size is None:
                        norms = whole[name]
                    else:
                        mini_mask = part.batch.mask[rows]
                        norms = _global_counts(
                            session, weight * mini_mask.shape[0], weight * float(mini_mask.sum())
                        )
                    chosen[name] = _Chosen(part, rows, weight, norms)
                loss_sum += _accumulate(session, chosen, micro_batch_size, pass_extras)
                optimizer = session.optimizer_step()
                grad_norms.append(optimizer["grad_norm"])
                if math.isnan(lr):
                    lr = optimizer["lr"]
            losses.append(loss_sum)
            for key, (weighted, tokens) in pass_extras.items():
                sums = extras.setdefault(key, [0.0, 0.0])
                sums[0] += weighted
                sums[1] += tokens
            if stop is not None and stop(_token_weighted(session, _merged(pass_extras))):
                break
    by_part = _token_weighted(session, {f"{name}\0{key}": v for (name, key), v in extras.items()})
    return UpdateStats(
        loss=session.all_reduce_mean(sum(losses) / len(losses)),
        extras=_token_weighted(session, _merged(extras)),
        grad_norm=sum(grad_norms) / len(grad_norms),
        lr=lr,
        optimizer=optimizer,
        normalisers=next(iter(whole.values())),
        iterations=len(losses),
        parts={
            name: PartStats(
                {
                    key.split("\0", 1)[1]: value
                    for key, value in by_part.items()
                    if key.split("\0", 1)[0] == name
                },
                whole[name],
            )
            for name in parts
        },
    )


#: Per (part name, stat): the sum of value x tokens, and the sum of tokens.
_Sums = dict[tuple[str, str], list[float]]


@dataclass(frozen=True)
class _Chosen:
    """A part's rows for one optimizer step, their weight (0: a stand-in) and normalisers."""

    part: Part
    rows: Rows
    weight: float
    norms: Normalisers


def _merged(sums: _Sums) -> dict[str, list[float]]:
    merged: dict[str, list[float]] = {}
    for (_, key), (weighted, tokens) in sums.items():
        total = merged.setdefault(key, [0.0, 0.0])
        total[0] += weighted
        total[1] += tokens
    return merged


def _rows(order: torch.Tensor | None, start: int, end: int) -> slice | torch.Tensor:
    return slice(start, end) if order is None else order[start:end]


def _accumulate(
    session: TrainingSession, chosen: Mapping[str, _Chosen], micro_batch_size: int, extras: _Sums
) -> float:
    """Forward and backward of each part's chosen rows in micro-batches; returns their loss."""
    plans: dict[str, tuple[torch.Tensor, list[int]]] = {}
    for name, choice in chosen.items():
        size = int(choice.part.batch.mask.shape[0])
        indices = torch.arange(size)[choice.rows] if isinstance(choice.rows, slice) else choice.rows
        plans[name] = (indices, list(range(0, int(indices.numel()), micro_batch_size)))
    longest = max(len(starts) for _, starts in plans.values())
    passes = max(int(value) for value in session.gather_object(longest))
    models = [choice.part.model for choice in chosen.values()]
    apart = (
        session.world_size == 1
        and all(model is not None for model in models)
        and independent_cpu_models([model for model in models if model is not None])
    )

    def part_loss(name: str, choice: _Chosen, i: int) -> tuple[torch.Tensor, float, dict[str, float], float]:
        """The part's weighted loss on its i-th micro-batch; its loss, stats and tokens (0 when
        weighted 0)."""
        indices, starts = plans[name]
        # A part with fewer micro-batches repeats its first one with weight 0: no gradient,
        # but its forward and backward collectives match the other processes'.
        start, scale = (starts[i], choice.weight) if i < len(starts) else (0, 0.0)
        micro_rows = _micro_rows(choice.rows, indices, start, micro_batch_size)
        loss, stats = choice.part.loss_fn(
            select_rows(choice.part.batch, micro_rows), micro_rows, choice.norms
        )
        if not scale:
            return loss * scale, 0.0, {}, 0.0
        return loss * scale, float(loss.detach()), stats, float(choice.part.batch.mask[micro_rows].sum())

    def part_backward(
        name: str, choice: _Chosen, i: int
    ) -> tuple[torch.Tensor, float, dict[str, float], float]:
        done = part_loss(name, choice, i)
        session.backward(done[0])
        return done

    loss_sum = 0.0
    for i in range(passes):
        with contextlib.nullcontext() if i == passes - 1 else session.no_sync():
            if apart:
                jobs = [functools.partial(part_backward, name, choice, i) for name, choice in chosen.items()]
                done = side_by_side(jobs)
            else:
                done = [part_loss(name, choice, i) for name, choice in chosen.items()]
                session.backward(sum((weighted for weighted, *_ in done[1:]), done[0][0]))
        for name, (_, value, stats, tokens) in zip(chosen, done, strict=True):
            loss_sum += value
            for key, stat in stats.items():
                sums = extras.setdefault((name, key), [0.0, 0.0])
                sums[0] += stat * tokens
                sums[1] += tokens
    return loss_sum


def _micro_rows(rows: Rows, indices: torch.Tensor, start: int, micro_batch_size: int) -> Rows:
    size = int(indices.numel())
    if isinstance(rows, slice):
        return slice(int(indices[start]), int(indices[min(start + micro_batch_size, size) - 1]) + 1)
    return indices[start : start + micro_batch_size]


def select_rows(batch: RolloutBatch, rows: slice | torch.Tensor) -> RolloutBatch:
    """The rows ``rows`` (a slice or an index tensor) of every per-row field of ``batch``."""
    select = getattr(batch, "select", None)
    if callable(select):
        selected: RolloutBatch = select(rows)
        return selected
    return dataclasses.replace(
        batch,
        **{
            field.name: value[rows]
            for field in dataclasses.fields(batch)
            if (value := getattr(batch, field.name)) is not None
        },
    )


def rollout_metrics(session: TrainingSession, trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Metrics of the replies every run logs, over every process's trajectories. Collective.

    - ``reply_tokens``: mean generated tokens per reply;
    - ``cut_at_length``: share of replies that ended at the token budget (``finish_reason`` "length");
    - ``cut_at_max_turns``: share of episodes the rollout stopped at ``max_turns`` replies before
      their env ended them (a run where this is above 0 also warns once: the turns after it are
      never played, and a reward paid only there is never seen);
    - ``entropy``: the sampling policy's mean per-token entropy, estimated as the mean of ``-log p``
      of the sampled tokens (unbiased, since the tokens were drawn from that distribution);
    - ``reward/<env_id>`` and ``success/<env_id>``: mean total reward per env, and share of its
      episodes with a positive total reward;
    - ``success/turn<k>`` (k = 1, 2, ..., only when some episode had several replies): share of the
      episodes with a k-th reply whose k-th reply earned a positive reward (in a retry env such as
      Math-v0 with ``max_turns=2``, ``success/turn2`` is how often the second try fixes the first).
    """
    replies = sum(len(t.finish_reasons) for t in trajectories)
    tokens = sum(t.num_generated_tokens for t in trajectories)
    neg_logp = -sum(lp for t in trajectories for lp, m in zip(t.logprobs, t.mask, strict=True) if m)
    cut = sum(reason == "length" for t in trajectories for reason in t.finish_reasons)
    cut_turns = sum(t.truncation == "max_turns" for t in trajectories)
    per_env: dict[str, list[float]] = {}
    for t in trajectories:
        totals = per_env.setdefault(t.env_id, [0.0, 0.0, 0.0])
        totals[0] += 1
        totals[1] += t.total_reward
        totals[2] += t.total_reward > 0
    turns: dict[int, list[int]] = {}  # turn -> [episodes with it, positive rewards there]
    for t in trajectories:
        for k, reward in enumerate(t.turn_rewards, start=1):
            counts = turns.setdefault(k, [0, 0])
            counts[0] += 1
            counts[1] += reward > 0
    gathered = session.gather_object(
        (replies, tokens, neg_logp, cut, per_env, turns, cut_turns, len(trajectories))
    )
    replies = sum(g[0] for g in gathered)
    tokens = sum(g[1] for g in gathered)
    episodes = sum(g[7] for g in gathered)
    cut_at_max_turns = sum(g[6] for g in gathered) / episodes if episodes else 0.0
    if cut_at_max_turns > 0:
        warnings.warn(  # one text: Python shows it once per run, not at every step
            "episodes were stopped at max_turns before their env ended them (cut_at_max_turns in the "
            "metrics): the turns after it are never played; raise max_turns to play them out",
            RuntimeWarning,
            stacklevel=2,
        )
    metrics = {
        "reply_tokens": tokens / replies if replies else 0.0,
        "cut_at_length": sum(g[3] for g in gathered) / replies if replies else 0.0,
        "cut_at_max_turns": cut_at_max_turns,
        "entropy": sum(g[2] for g in gathered) / tokens if tokens else 0.0,
    }
    envs: dict[str, list[float]] = {}
    for g in gathered:
        for env_id, (count, reward, success) in g[4].items():
            totals = envs.setdefault(env_id, [0.0, 0.0, 0.0])
            totals[0] += count
            totals[1] += reward
            totals[2] += success
    for env_id, (count, reward, success) in sorted(envs.items()):
        metrics[f"reward/{env_id}"] = reward / count
        metrics[f"success/{env_id}"] = success / count
    all_turns: dict[int, list[int]] = {}
    for g in gathered:
        for k, (count, positive) in g[5].items():
            totals_k = all_turns.setdefault(k, [0, 0])
            totals_k[0] += count
            totals_k[1] += positive
    if len(all_turns) > 1:
        for k, (count, positive) in sorted(all_turns.items()):
            metrics[f"success/turn{k}"] = positive / count
    return metrics


def parse_env_kwargs(text: str) -> dict[str, Any]:
    """An env's keyword arguments given as a JSON object (``env_kwargs`` of the configs).

    Raises:
        ValueError: not JSON, or JSON that is not an object.
    """
    try:
        kwargs = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"env_kwargs is not valid JSON: {error}") from None
    if not isinstance(kwargs, dict):
        raise ValueError("env_kwargs must be a JSON object, such as '{\"level\": 1}'")
    return kwargs


class SamplingSettings(Protocol):
    """The fields of an on-policy config that say how replies are sampled."""

    max_new_tokens: int
    temperature: float
    top_p: float
    ignore_stop: bool
    run: RunConfig


class RolloutSettings(SamplingSettings, Protocol):
    """The fields of an on-policy config that say what and how to roll out."""

    env_id: str
    env_kwargs: str
    env_mixture: str
    max_turns: int


class ReplySettings(Protocol):
    """The fields of a run config that shape each reply and bound each episode."""

    max_new_tokens: int
    temperature: float
    top_p: float
    max_turns: int


def check_rollout_settings(config: ReplySettings) -> None:
    """Raise ValueError naming the first sampling or rollout setting out of range: run configs call
    it when they are built, so a bad value is refused before any model loads."""
    check_sampling(config.max_new_tokens, config.temperature, config.top_p)
    if config.max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {config.max_turns}")


def run_sampling(config: SamplingSettings, session: TrainingSession) -> SamplingParams:
    """The run's sampling parameters, seeded per process and reproducible from ``config.run.seed``."""
    return SamplingParams(
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        ignore_stop=config.ignore_stop,
        seed=config.run.seed * 1_000_003 + session.rank,
    )


def run_task_seeds(config: SamplingSettings, session: TrainingSession) -> TaskSeeds:
    """The run's task seeds: distinct per process, reproducible from ``config.run.seed``."""
    return TaskSeeds(
        base=training_seed_base(config.run.seed), rank=session.rank, world_size=session.world_size
    )


def check_rollout_envs(config: RolloutSettings) -> None:
    """Raise for an env of ``config`` (its ``env_id``, or each env of its ``env_mixture``) that no env
    answers to (see :func:`~mrlm.train.rollout.envs.check_env_id`) or that cannot start: each is
    built with its ``env_kwargs`` and reset with the run's first task seed
    (:func:`~mrlm.train.rollout.envs.started_env`), as ``mrlm-train eval`` does, before any model loads.

    Raises:
        UnknownEnvError, EnvArgumentError: an id no env answers to, or arguments its env does not take.
        EnvFailedError: an env that raised when built or reset.
    """
    envs = (
        [(entry.env_id, entry.kwargs, entry.label) for entry in parse_mixture(config.env_mixture)]
        if config.env_mixture
        else [(config.env_id, parse_env_kwargs(config.env_kwargs), config.env_id)]
    )
    seed = training_seed_base(config.run.seed)
    for env_id, kwargs, label in envs:
        check_env_id(env_id)  # a server that is not there says so itself, not as an env that failed
        with started_env(env_factory(env_id, kwargs, None), label, seed):
            pass


def rollout_for(
    config: RolloutSettings, session: TrainingSession, generator: Any, tokenizer: Any
) -> tuple[Engine, TaskSeeds]:
    """The rollout engine and task seeds of a run: sampling seeded per process, tasks distinct per
    process, both reproducible from ``config.run.seed``."""
    sampling = run_sampling(config, session)
    engine = rollout_engine(
        config.env_id,
        parse_env_kwargs(config.env_kwargs),
        config.env_mixture,
        generator,
        tokenizer,
        sampling,
        max_turns=config.max_turns,
        seed=config.run.seed,
    )
    return engine, run_task_seeds(config, session)


def rollout_engine(
    env_id: str,
    env_kwargs: dict[str, Any],
    env_mixture: str,
    generator: Any,
    tokenizer: Any,
    sampling: SamplingParams,
    *,
    max_turns: int,
    seed: int,
) -> Engine:
    """The rollout engine of ``env_id`` (with ``env_kwargs``), or, when ``env_mixture`` is given
    (see :mod:`mrlm.train.mixture`), one engine per env of the mixture, drawn by weight under ``seed``."""
    if not env_mixture:
        return RolloutEngine(
            env_id, generator, tokenizer, sampling, env_kwargs=env_kwargs, max_turns=max_turns
        )
    entries = parse_mixture(env_mixture)
    engines = [
        RolloutEngine(
            entry.env_id,
            generator,
            tokenizer,
            # Each env samples its own stream, so that two envs' replies are not correlated.
            dataclasses.replace(
                sampling, seed=None if sampling.seed is None else sampling.seed + 7919 * index
            ),
            env_kwargs=entry.kwargs,
            env_id=entry.label,
            max_turns=max_turns,
        )
        for index, entry in enumerate(entries)
    ]
    return MixedRolloutEngine(engines, EnvMixture(entries, seed))


class TaskSeeds:
    """Hands out task seeds: distinct per process, reproducible, resumable (``cursor``)."""

    def __init__(self, base: int, rank: int, world_size: int) -> None:
        self.base, self.rank, self.world_size = base, rank, world_size
        self.cursor = 0

    def take(self, n: int) -> list[int]:
        seeds = [self.base + (self.cursor + i) * self.world_size + self.rank for i in range(n)]
        self.cursor += n
        return seeds


def _token_weighted(session: TrainingSession, sums: dict[str, list[float]]) -> dict[str, float]:
    keys = sorted(sums)
    local = torch.tensor([value for key in keys for value in sums[key]], dtype=torch.float64)
    totals = _all_reduce_sum(local, session) if keys else []
    return {key: totals[2 * i] / max(totals[2 * i + 1], 1.0) for i, key in enumerate(keys)}


def _all_reduce_sum(tensor: torch.Tensor, session: TrainingSession) -> Any:
    if session.world_size == 1:
        return tensor.tolist()
    return [sum(values) for values in zip(*session.gather_object(tensor.tolist()), strict=True)]
