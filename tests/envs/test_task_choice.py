"""The one rule by which every env with a collection of tasks picks the task of a reset."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from mrlm.envs.core.task_choice import choose_task

TASKS = ("a", "b", "c", "d", "e")
IDS = {task: position for position, task in enumerate(TASKS)}


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def test_a_seed_serves_task_seed_mod_n_and_leaves_the_generator_alone() -> None:
    rng = _rng()
    assert [choose_task(TASKS, IDS, rng, {}, seed=seed) for seed in range(7)] == list("abcdeab")
    assert rng.integers(1_000_000) == _rng().integers(1_000_000)  # no draw was made


def test_options_come_before_the_seed() -> None:
    assert choose_task(TASKS, IDS, _rng(), {"task_id": "d", "index": 0}, seed=1) == "d"
    assert choose_task(TASKS, IDS, _rng(), {"index": np.int64(4)}, seed=1) == "e"
    assert choose_task(TASKS, IDS, _rng(), {"other": 1}, seed=2) == "c"  # unknown keys are ignored


def test_without_a_seed_the_generator_draws() -> None:
    expected = TASKS[int(_rng().integers(len(TASKS)))]
    assert choose_task(TASKS, IDS, _rng(), {}) == expected


@pytest.mark.parametrize("index", [5, -1, True, 1.0, "1"])
def test_bad_options_are_refused(index: object) -> None:
    with pytest.raises(ValueError, match=r"options\['index'\] must be an int in \[0, 5\)"):
        choose_task(TASKS, IDS, _rng(), {"index": index})
    with pytest.raises(ValueError, match="unknown task_id 'z'"):
        choose_task(TASKS, IDS, _rng(), {"task_id": "z"})


@pytest.mark.parametrize("task_id", [["a"], {"a": 1}, 0, None])
def test_a_task_id_that_is_not_a_string_is_refused_with_its_type(task_id: object) -> None:
    name = type(task_id).__name__
    with pytest.raises(ValueError, match=rf"options\['task_id'\] must be a str, got {name} "):
        choose_task(TASKS, IDS, _rng(), {"task_id": task_id})


def test_an_env_refuses_an_unhashable_task_id_with_a_value_error() -> None:
    env = gymnasium.make("mrlm/Code-v0")
    with pytest.raises(ValueError, match=r"options\['task_id'\] must be a str, got list \['a'\]"):
        env.reset(options={"task_id": ["a"]})
    env.close()
