"""The snapshot pool: bounded, keeps the initial policy, draws reproducibly, restores what it held."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from mrlm.train.self_play import SnapshotPool, load_snapshot, take_snapshot


def _snapshot(value: float) -> dict[str, torch.Tensor]:
    return {"w": torch.full((2,), value)}


def test_the_pool_keeps_the_first_snapshot_and_drops_the_oldest_of_the_others() -> None:
    pool = SnapshotPool(size=3, seed=0)
    for step in (0, 10, 20, 30, 40):
        pool.add(step, _snapshot(step))
    assert pool.steps == [0, 30, 40]
    assert float(pool.snapshots[0]["w"][0]) == 0.0
    pool.add(40, _snapshot(-1.0))  # a step already held is kept as it was
    assert float(pool.snapshots[40]["w"][0]) == 40.0


def test_a_pool_of_one_only_ever_holds_the_initial_policy() -> None:
    pool = SnapshotPool(size=1, seed=0)
    pool.add(0, _snapshot(0))
    assert not pool.wants(5)
    pool.add(5, _snapshot(5))
    assert pool.steps == [0]
    assert pool.sample(7)[0] == 0


def test_draws_depend_on_seed_and_step_only_and_reach_every_snapshot() -> None:
    def filled(seed: int) -> SnapshotPool:
        pool = SnapshotPool(size=4, seed=seed)
        for step in (0, 1, 2, 3):
            pool.add(step, _snapshot(step))
        return pool

    draws = [filled(7).sample(step)[0] for step in range(200)]
    assert draws == [filled(7).sample(step)[0] for step in range(200)]
    assert draws != [filled(8).sample(step)[0] for step in range(200)]
    counts = Counter(draws)
    assert set(counts) == {0, 1, 2, 3}
    assert min(counts.values()) > 25  # uniform: 50 expected each, 25 is > 5 standard deviations off
    step, snapshot = filled(7).sample(11)
    assert float(snapshot["w"][0]) == step


def test_an_empty_pool_has_nothing_to_draw() -> None:
    with pytest.raises(LookupError, match="empty"):
        SnapshotPool(size=2, seed=0).sample(0)
    with pytest.raises(ValueError, match="at least one"):
        SnapshotPool(size=0, seed=0)


def test_the_state_restores_the_same_snapshots_and_draws() -> None:
    pool = SnapshotPool(size=3, seed=5)
    for step in (0, 2, 4, 6):
        pool.add(step, _snapshot(step))
    restored = SnapshotPool(size=3, seed=5)
    restored.load_state_dict(pool.state_dict())
    assert restored.steps == pool.steps == [0, 4, 6]
    for step in range(20):
        (a, snap_a), (b, snap_b) = pool.sample(step), restored.sample(step)
        assert a == b
        assert torch.equal(snap_a["w"], snap_b["w"])


def test_a_snapshot_is_a_copy_that_rebuilds_the_model() -> None:
    torch.manual_seed(0)
    first, head = torch.nn.Linear(3, 2), torch.nn.Linear(2, 1)
    model = torch.nn.Sequential(first, head)
    head.requires_grad_(False)
    trained = [(name, param) for name, param in model.named_parameters() if param.requires_grad]
    snapshot = take_snapshot(trained)
    assert set(snapshot) == {"0.weight", "0.bias"}
    before = first.weight.detach().clone()
    x = torch.randn(4, 3)
    expected = model(x)
    with torch.no_grad():
        first.weight.add_(1.0)  # training goes on; the snapshot must not move
    assert torch.equal(snapshot["0.weight"], before)

    copy_head = torch.nn.Linear(2, 1)
    copy_head.load_state_dict(head.state_dict())  # the frozen part: the same in both
    copy = torch.nn.Sequential(torch.nn.Linear(3, 2), copy_head)
    load_snapshot(copy, snapshot)
    assert torch.equal(copy(x), expected)  # the model as it was when the snapshot was taken
    with pytest.raises(KeyError, match="no parameters"):
        load_snapshot(copy, {"2.weight": torch.zeros(1)})
