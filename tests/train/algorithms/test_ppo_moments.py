"""PPO's global moments (advantage whitening, reward scaling): float64 references, one process or several."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
import torch

from mrlm.train.algorithms.ppo import global_moments, global_std, global_whiten


class _Exchange:
    """What processes' ``gather_object`` calls meet in: every rank's object, in rank order."""

    def __init__(self, world_size: int) -> None:
        self.slots: list[Any] = [None] * world_size
        self.barrier = threading.Barrier(world_size, timeout=10)


class _Process:
    def __init__(self, exchange: _Exchange, rank: int) -> None:
        self.exchange, self.rank, self.world_size = exchange, rank, len(exchange.slots)

    def gather_object(self, obj: Any) -> list[Any]:
        self.exchange.slots[self.rank] = obj
        self.exchange.barrier.wait()
        gathered = list(self.exchange.slots)
        self.exchange.barrier.wait()  # every rank has read before the next call writes
        return gathered


def _on_processes(shards: list[torch.Tensor], function: Any) -> list[Any]:
    exchange = _Exchange(len(shards))
    with ThreadPoolExecutor(len(shards)) as pool:
        futures = [pool.submit(function, _Process(exchange, r), shard) for r, shard in enumerate(shards)]
        return [future.result() for future in futures]


def _values(mean: float, spread: float, n: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (mean + spread * torch.randn(n, generator=generator, dtype=torch.float64)).float()


@pytest.mark.parametrize(("mean", "spread"), [(0.0, 1.0), (10.0, 0.01), (100.0, 0.01), (1000.0, 0.05)])
def test_the_std_of_values_far_from_zero_keeps_its_digits(mean: float, spread: float) -> None:
    values = _values(mean, spread, 300)
    reference = np.asarray(values, dtype=np.float64)
    one = _on_processes([values], global_std)[0]
    assert one == pytest.approx(float(reference.std()), rel=1e-6)
    count, centre, _ = _on_processes([values], global_moments)[0]
    assert count == 300 and centre == pytest.approx(float(reference.mean()), rel=1e-12)
    # Split unevenly over three processes: the same moments on each.
    shards = [values[:17], values[17:200], values[200:]]
    for std in _on_processes(shards, global_std):
        assert std == pytest.approx(float(reference.std()), rel=1e-6)


@pytest.mark.parametrize(("mean", "spread"), [(0.0, 1.0), (10.0, 0.01), (100.0, 0.01)])
def test_whitened_advantages_have_mean_0_and_std_1_over_the_mask(mean: float, spread: float) -> None:
    values = _values(mean, spread, 240, seed=1).view(6, 40)
    mask = torch.ones(6, 40)
    mask[:, :5] = 0  # prompt tokens
    mask[2, 30:] = 0  # padding
    selected = np.asarray(values, dtype=np.float64)[mask.bool().numpy()]
    expected = (np.asarray(values, dtype=np.float64) - selected.mean()) / (selected.std() + 1e-8)
    whitened = _on_processes([values], lambda p, v: global_whiten(p, v, mask))[0]
    assert whitened.dtype == values.dtype
    on = whitened[mask.bool()]
    assert float(on.double().mean()) == pytest.approx(0.0, abs=1e-4)
    assert float(on.double().std(unbiased=False)) == pytest.approx(1.0, rel=1e-4)
    assert torch.all(whitened[~mask.bool()] == 0)
    torch.testing.assert_close(whitened, torch.from_numpy(expected).float() * mask, rtol=1e-4, atol=1e-4)
    # Rows split over two processes whiten alike.
    halves = _on_processes(
        [values[:2], values[2:]], lambda p, v: global_whiten(p, v, mask[:2] if v.shape[0] == 2 else mask[2:])
    )
    torch.testing.assert_close(torch.cat(halves), whitened, rtol=1e-5, atol=1e-5)
