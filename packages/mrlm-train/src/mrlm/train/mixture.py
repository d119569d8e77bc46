"""Training on several envs at once: each task's env is drawn by weight.

A mixture is written as JSON, a list of envs::

    [{"id": "mrlm/Math-v0", "weight": 2, "kwargs": {"level": 1}},
     {"id": "mrlm/Code-v0", "weight": 1},
     {"id": "mrlm/Math-v0", "weight": 1, "kwargs": {"level": 3}, "name": "math-hard"}]

``weight`` defaults to 1 and ``kwargs`` to ``{}``; ``name`` (default: the id) is what trajectories and
metrics call the env (``reward/<name>``), so one id may appear twice with other arguments.

Each task's env is a pure function of the run's seed and the task's seed (:meth:`EnvMixture.choose`),
so a resumed run draws exactly what the uninterrupted one would have, with nothing more to save than
the task seeds' cursor; groups stay whole (every episode of a group plays the same env and task).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mrlm.train.rollout import RolloutEngine, Trajectory

_KEYS = {"id", "weight", "kwargs", "name"}


@dataclass(frozen=True)
class MixtureEntry:
    """One env of a mixture."""

    env_id: str
    weight: float = 1.0
    kwargs: dict[str, Any] = field(default_factory=dict)
    name: str = ""

    @property
    def label(self) -> str:
        """What trajectories and metrics call this env."""
        return self.name or self.env_id


def parse_mixture(text: str) -> list[MixtureEntry]:
    """The entries of a mixture written as JSON (see the module docstring).

    Raises:
        ValueError: not JSON, not a non-empty list of objects, an unknown key, a missing or empty
            id, a weight that is not a finite number >= 0, all weights 0, kwargs that are not an
            object, or two entries with the same name.
    """
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"the env mixture is not valid JSON: {error}") from None
    except RecursionError:  # thousands of nested brackets: the decoder gives up
        raise ValueError("the env mixture is JSON nested too deeply") from None
    if not isinstance(raw, list) or not raw:
        raise ValueError('the env mixture must be a non-empty JSON list, such as [{"id": "mrlm/Math-v0"}]')
    entries = [_entry(item, index) for index, item in enumerate(raw)]
    labels = [entry.label for entry in entries]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ValueError(f"env mixture entries share the names {repeated}: give each a distinct 'name'")
    if not any(entry.weight > 0 for entry in entries):
        raise ValueError("every weight of the env mixture is 0")
    return entries


def _entry(item: object, index: int) -> MixtureEntry:
    where = f"env mixture entry {index}"
    if not isinstance(item, dict):
        raise ValueError(f"{where} must be an object with an 'id', got {item!r}")
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        raise ValueError(f"{where} has unknown keys {unknown}; allowed: {sorted(_KEYS)}")
    env_id, weight, kwargs = item.get("id"), item.get("weight", 1.0), item.get("kwargs", {})
    name = item.get("name", "")
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"{where} needs an 'id' (an env id string)")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < float("inf"):
        raise ValueError(f"{where}: 'weight' must be a finite number >= 0, got {weight!r}")
    if not isinstance(kwargs, dict):
        raise ValueError(f"{where}: 'kwargs' must be an object, got {kwargs!r}")
    if not isinstance(name, str):
        raise ValueError(f"{where}: 'name' must be a string, got {name!r}")
    return MixtureEntry(env_id, float(weight), kwargs, name)


class EnvMixture:
    """Draws each task's env by weight, from the run's seed and the task's seed alone."""

    def __init__(self, entries: Sequence[MixtureEntry], seed: int) -> None:
        if not entries:
            raise ValueError("an env mixture needs at least one env")
        self.entries = list(entries)
        self.seed = seed
        # Scaled by the largest first: finite weights near float's limit would sum to inf.
        largest = max(entry.weight for entry in self.entries)
        scaled = [entry.weight / largest for entry in self.entries] if largest > 0 else []
        total = sum(scaled)
        running, self._bounds = 0.0, []
        for weight in scaled:
            running += weight / total
            self._bounds.append(running)

    def choose(self, task_seed: int) -> int:
        """Index of the env for the task ``task_seed``; the same in every run with this seed."""
        draw = random.Random(f"mrlm-mixture:{self.seed}:{task_seed}").random()  # str seeds: stable
        index = bisect.bisect_right(self._bounds, draw)
        while self.entries[min(index, len(self.entries) - 1)].weight == 0:  # float rounding at a bound
            index -= 1
        return min(index, len(self.entries) - 1)


class MixedRolloutEngine:
    """Plays each task in the env the mixture draws for it, with one engine per env.

    ``collect(seeds, group_size)`` returns the groups in the order of ``seeds``, group-contiguous as
    :meth:`RolloutEngine.collect` does, with group ids unique across the engines.
    """

    def __init__(self, engines: Sequence[RolloutEngine], mixture: EnvMixture) -> None:
        if len(engines) != len(mixture.entries):
            raise ValueError(f"{len(engines)} engines for {len(mixture.entries)} envs")
        self.engines = list(engines)
        self.mixture = mixture
        self._groups = 0

    def collect(self, seeds: Sequence[int], group_size: int) -> list[Trajectory]:
        chosen = [self.mixture.choose(seed) for seed in seeds]
        played: dict[int, list[Trajectory]] = {}
        for index, engine in enumerate(self.engines):
            mine = [seed for seed, env in zip(seeds, chosen, strict=True) if env == index]
            if mine:
                played[index] = engine.collect(mine, group_size)
        cursors = dict.fromkeys(played, 0)
        trajectories: list[Trajectory] = []
        for env in chosen:
            start = cursors[env]
            cursors[env] += group_size
            for trajectory in played[env][start : start + group_size]:
                trajectories.append(dataclasses.replace(trajectory, group=self._groups))
            self._groups += 1
        return trajectories

    def state_dict(self) -> dict[str, Any]:
        return {"groups": self._groups, "engines": [engine.state_dict() for engine in self.engines]}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._groups = int(state["groups"])
        for engine, engine_state in zip(self.engines, state["engines"], strict=True):
            engine.load_state_dict(engine_state)

    def __enter__(self) -> MixedRolloutEngine:
        for engine in self.engines:
            engine.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for engine in self.engines:
            engine.__exit__(*exc)
