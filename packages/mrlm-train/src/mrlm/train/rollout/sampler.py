"""Answering a round of prompts with one ``generate`` call per policy.

Every prompt of a round that one policy must answer (all its agents, in every episode) goes into a
single call of that policy's generator; the completions come back in request order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from mrlm.train.generation.base import Completion, SamplingParams
from mrlm.train.rollout.policies import PolicyTable

#: A prompt to answer: the name of the policy and the token ids it continues.
Request = tuple[str, Sequence[int]]


def generate_round(table: PolicyTable, requests: Sequence[Request], call: int, turn: int) -> list[Completion]:
    """One completion per request, in request order, with one generate call per policy asked.

    ``call`` (the engine's collect count) and ``turn`` (the round within it) seed the sampling noise
    of each call; see :func:`round_params`.
    """
    completions: list[Completion | None] = [None] * len(requests)
    for index, name in enumerate(table.names()):
        rows = [row for row, (policy, _) in enumerate(requests) if policy == name]
        if not rows:
            continue
        prompts = [requests[row][1] for row in rows]
        params = round_params(table.sampling(name), call, turn, index)
        answers = table[name].generator.generate(prompts, params)
        if len(answers) != len(prompts):
            raise RuntimeError(
                f"the generator of policy {name!r} returned {len(answers)} completions for {len(prompts)} prompts"
            )
        for row, answer in zip(rows, answers, strict=True):
            completions[row] = answer
    unknown = sorted(
        {policy for (policy, _), done in zip(requests, completions, strict=True) if done is None}
    )
    if unknown:
        raise KeyError(f"no policy named {unknown}; the policies are {table.names()}")
    return [c for c in completions if c is not None]


def round_params(sampling: SamplingParams, call: int, turn: int, policy_index: int = 0) -> SamplingParams:
    """``sampling`` with the seed of one generate call (unchanged when ``sampling.seed`` is None).

    A fresh, reproducible noise stream per call: reusing one seed every call would correlate the
    samples of successive turns and training steps. The first policy's stream is the one a
    single-policy engine always used, so its rollouts are unchanged.
    """
    if sampling.seed is None:
        return sampling
    words = [sampling.seed, call, turn] + ([policy_index] if policy_index else [])
    state = np.random.SeedSequence(words).generate_state(1, np.uint64)[0]
    return dataclasses.replace(sampling, seed=int(state >> np.uint64(1)))
