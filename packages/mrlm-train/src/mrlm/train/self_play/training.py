"""Self-play in the multi-agent trainers: opponents drawn from past snapshots, win rates during training.

Two settings of :class:`~mrlm.train.algorithms.multi_agent.MultiAgentConfig`, both for one shared
policy credited per agent (``policies="shared"``, ``credit="agent"``) on a competitive env:

* ``opponent_pool = N > 0``: the policy's trained weights are copied to CPU at step 0 and every
  ``snapshot_every`` steps into a pool of at most ``N`` snapshots (the initial one always kept, see
  :mod:`~mrlm.train.self_play.pool`). Each step one snapshot is drawn, loaded into a frozen copy of
  the model, and plays the seats the learner does not: tasks are dealt to the seats in turn and only
  the learner's rows are trained on (:mod:`~mrlm.train.self_play.opponents`). Groups are still one
  agent's rows of one task, so advantages stay per side. ``opponent_pool = 0`` is plain self-play:
  the policy plays every seat and learns from all of them;
* ``eval_every = K > 0``: every ``K`` steps the policy plays ``eval_tasks`` fixed tasks from every
  seat, greedily, against its initial weights (a frozen copy) and against a rule-based opponent
  that always gives ``rule_reply`` (:class:`~mrlm.train.self_play.fixed_reply.FixedReply`), and
  logs ``win_rate/initial`` and ``win_rate/rule`` (:mod:`~mrlm.train.self_play.win_rate`).

The pool goes into every checkpoint (each process's extra state), so a resumed run draws the same
opponents with the same weights. Under FSDP the snapshots are each process's shards: resume such a
run with the same number of processes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from mrlm.train.algorithms.onpolicy import run_sampling
from mrlm.train.generation import HFGenerator
from mrlm.train.generation.base import SamplingParams
from mrlm.train.loop import CheckpointError, TrainingSession
from mrlm.train.loop.fsdp import gathered_weights
from mrlm.train.policy import load_policy
from mrlm.train.rollout import Policy, RolloutEngine
from mrlm.train.rollout.envs import EnvFactory
from mrlm.train.rollout.policies import AgentPolicies
from mrlm.train.self_play.fixed_reply import FixedReply
from mrlm.train.self_play.opponents import NO_POOL, WITH_POOL, OpponentRollout, pool_size_changed
from mrlm.train.self_play.pool import SnapshotPool, load_snapshot, take_snapshot
from mrlm.train.self_play.win_rate import Record, eval_seeds, play_record
from mrlm.train.setting_checks import check_counts

if TYPE_CHECKING:
    from mrlm.train.algorithms.multi_agent import MultiAgentConfig

#: The frozen copy of the model that plays the pool's snapshots, in the session.
OPPONENT = "self_play_opponent"
#: The frozen copy of the initial policy that win_rate/initial plays against, in the session.
INITIAL = "self_play_initial"
#: What the self-play settings add to each step's metrics (when they are on).
METRICS = ("win_rate/initial", "win_rate/rule", "opponent/snapshot_step")


def check_settings(config: MultiAgentConfig) -> None:
    """Raise ValueError for self-play settings out of range or that do not fit the rest of ``config``."""
    for name in ("opponent_pool", "eval_every"):
        if getattr(config, name) < 0:
            raise ValueError(f"{name} must be 0 (off) or positive, got {getattr(config, name)}")
    check_counts(snapshot_every=config.snapshot_every, eval_tasks=config.eval_tasks)
    if not (config.opponent_pool or config.eval_every):
        return
    if config.policies != "shared":
        raise ValueError(
            "opponent_pool and eval_every play the policy against other versions of itself: they need "
            "policies='shared'"
        )
    if config.credit != "agent":
        raise ValueError(
            "opponent_pool and eval_every are for competitive games, where each side learns from its own "
            "reward: use credit='agent'"
        )


def frozen_models(config: MultiAgentConfig) -> dict[str, torch.nn.Module]:
    """The frozen copies of the initial model the settings need, by their session names."""
    names = [OPPONENT] * (config.opponent_pool > 0) + [INITIAL] * (config.eval_every > 0)
    return {name: load_policy(config.model, seed=config.run.seed)[0] for name in names}


class SelfPlay:
    """The self-play part of one run (see the module docstring); does nothing when both settings are off.

    Args:
        config: the run's settings.
        session: the run's session, holding :func:`frozen_models` among its frozen models.
        tokenizer: the shared policy's tokenizer.
        make_env: builds the env the run trains on.
        seats: the env's agents.
    """

    def __init__(
        self,
        config: MultiAgentConfig,
        session: TrainingSession,
        tokenizer: Any,
        make_env: EnvFactory,
        seats: Sequence[str],
    ) -> None:
        self.config = config
        self.session = session
        self.tokenizer = tokenizer
        self.make_env = make_env
        self.learner = session.model_names[0]
        self.pool = SnapshotPool(config.opponent_pool, config.run.seed) if config.opponent_pool else None
        self.rollout: OpponentRollout | None = None
        """With a pool, the rollout of the learner against the drawn snapshot (None without)."""
        self._loaded: int | None = None  # the snapshot step the opponent copy holds
        if self.pool is not None:
            self.rollout = OpponentRollout(
                self._engine,
                (self.learner, self._policy(session.unwrapped(self.learner))),
                self._policy(session.frozen[OPPONENT]),
                seats,
            )

    @contextlib.contextmanager
    def opponent(self) -> Iterator[dict[str, float]]:
        """Around one training step: snapshot the policy when due, draw the step's opponent and load it
        (under FSDP, gathered for the step). Yields the step's ``opponent/snapshot_step``, or nothing
        without a pool. Collective."""
        if self.pool is None:
            yield {}
            return
        step = self.session.step
        if step % self.config.snapshot_every == 0 and self.pool.wants(step):
            self.pool.add(step, take_snapshot(self.session.trained(self.learner).named))
        chosen, snapshot = self.pool.sample(step)
        model = self.session.frozen[OPPONENT]
        if chosen != self._loaded:
            load_snapshot(model, snapshot)
            self._loaded = chosen
        with _frozen_generation(self.session, model):
            yield {"opponent/snapshot_step": float(chosen)}

    def evaluate(self) -> dict[str, float]:
        """Every ``eval_every`` steps, ``win_rate/initial`` and ``win_rate/rule`` of the policy now; else
        nothing. The tasks are split over the processes and the games counted over all. Collective."""
        every = self.config.eval_every
        if not every or self.session.step % every:
            return {}
        session, tokenizer = self.session, self.tokenizer
        seeds = eval_seeds(self.config.eval_tasks)[session.rank :: session.world_size]
        greedy = SamplingParams(max_new_tokens=self.config.max_new_tokens, temperature=0.0)
        initial = session.frozen[INITIAL]
        records: dict[str, Record] = {}
        with session.generation_mode(self.learner) as model, _frozen_generation(session, initial):
            player = self._policy(model)
            opponents = {
                "initial": self._policy(initial),
                "rule": Policy(FixedReply(tokenizer, self.config.rule_reply), tokenizer),
            }
            for name, opponent in opponents.items():
                records[name] = play_record(
                    self.make_env, player, opponent, seeds, sampling=greedy, max_turns=self.config.max_turns
                )
        merged: dict[str, Record] = {}
        for part in session.gather_object(records):
            for name, record in part.items():
                merged[name] = merged.get(name, Record()) + record
        return {f"win_rate/{name}": record.win_rate for name, record in merged.items()}

    def state_dict(self) -> dict[str, Any]:
        """The pool, for a checkpoint's extra state (empty without one)."""
        return {"pool": self.pool.state_dict()} if self.pool is not None else {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`.

        Raises:
            CheckpointError: the checkpoint holds an opponent pool and this run has none, or the
                reverse, or its pool is of another size than this run's; nothing is loaded.
        """
        if self.pool is None:
            if "pool" in state:
                raise CheckpointError(WITH_POOL)
            return
        if "pool" not in state:
            raise CheckpointError(NO_POOL)
        saved = SnapshotPool.saved_size(state["pool"])
        if saved is None and len(state["pool"]["steps"]) > self.pool.size:
            saved = len(state["pool"]["steps"])  # an older checkpoint: at least this many
        if saved is not None and saved != self.pool.size:
            raise CheckpointError(pool_size_changed(saved, self.pool.size))
        self.pool.load_state_dict(state["pool"])
        self._loaded = None

    def _policy(self, model: torch.nn.Module) -> Policy:
        return Policy(HFGenerator(model, self.tokenizer), self.tokenizer)

    def _engine(self, policies: Mapping[str, Policy], agent_policies: AgentPolicies) -> RolloutEngine:
        config = self.config
        return RolloutEngine(
            self.make_env,
            policies,
            sampling=run_sampling(config, self.session),
            agent_policies=agent_policies,
            joint=config.joint,
            env_id=config.env_id,
            max_turns=config.max_turns,
        )


def _frozen_generation(
    session: TrainingSession, model: torch.nn.Module
) -> contextlib.AbstractContextManager[Any]:
    """A frozen model ready to sample: under FSDP its weights gathered (collective), else as it is."""
    return gathered_weights(model) if session.strategy == "fsdp" else contextlib.nullcontext(model)
