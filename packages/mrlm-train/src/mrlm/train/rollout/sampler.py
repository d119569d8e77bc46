"""Answering a round of prompts with one ``generate`` call per policy.

Every prompt of a round that one policy must answer (all its agents, in every episode) goes into a
single call of that policy's generator; the completions come back in request order. Policies that
are separate small models of one shape on CPU decode together, one batched pass per step for all of
them (:func:`~mrlm.train.generation.joint.generate_jointly`, which says when that pays); other
separate models on CPU generate side by side, sharing torch's threads
(:func:`~mrlm.train.loop.cpu_threads.side_by_side`). Either way each call's noise comes from its own
seed, and the completions are those of the calls one after the other (up to float rounding when
decoded jointly).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import numpy as np
import torch

from mrlm.train.generation.base import Completion, SamplingParams
from mrlm.train.generation.hf import HFGenerator
from mrlm.train.generation.joint import generate_jointly, joint_reason
from mrlm.train.loop.cpu_threads import independent_cpu_models, side_by_side
from mrlm.train.rollout.policies import PolicyTable

#: A prompt to answer: the name of the policy and the token ids it continues.
Request = tuple[str, Sequence[int]]


def generate_round(table: PolicyTable, requests: Sequence[Request], call: int, turn: int) -> list[Completion]:
    """One completion per request, in request order, with one generate call per policy asked.

    ``call`` (the engine's collect count) and ``turn`` (the round within it) seed the sampling noise
    of each call; see :func:`round_params`.
    """
    completions: list[Completion | None] = [None] * len(requests)
    calls: list[tuple[str, list[int], SamplingParams]] = []
    for index, name in enumerate(table.names()):
        rows = [row for row, (policy, _) in enumerate(requests) if policy == name]
        if rows:
            calls.append((name, rows, round_params(table.sampling(name), call, turn, index)))
    answers_per_call = _answers(table, requests, calls)
    for (name, rows, _), answers in zip(calls, answers_per_call, strict=True):
        if len(answers) != len(rows):
            raise RuntimeError(
                f"the generator of policy {name!r} returned {len(answers)} completions for {len(rows)} prompts"
            )
        for row, answer in zip(rows, answers, strict=True):
            completions[row] = answer
    unknown = sorted(
        {policy for (policy, _), done in zip(requests, completions, strict=True) if done is None}
    )
    if unknown:
        raise KeyError(f"no policy named {unknown}; the policies are {table.names()}")
    return [c for c in completions if c is not None]


def _answers(
    table: PolicyTable, requests: Sequence[Request], calls: list[tuple[str, list[int], SamplingParams]]
) -> list[list[Completion]]:
    """Each call's completions: decoded jointly when the policies are models of one shape on CPU,
    else side by side when they are separate models on CPU, else one call after the other."""
    generators = [table[name].generator for name, _, _ in calls]
    prompts = [_prompts(requests, rows) for _, rows, _ in calls]
    models = [g.model for g in generators if isinstance(g, HFGenerator)]
    if len(models) < len(generators) or not independent_cpu_models(models):
        return [
            g.generate(p, params) for g, p, (_, _, params) in zip(generators, prompts, calls, strict=True)
        ]
    # Unseeded calls draw their seeds here, in policy order, as each call would draw it in turn.
    params = [
        dataclasses.replace(p, seed=int(torch.randint(0, 2**62, ()).item())) if p.seed is None else p
        for _, _, p in calls
    ]
    hf = [g for g in generators if isinstance(g, HFGenerator)]
    if not joint_reason(hf, prompts, params):
        return generate_jointly(hf, prompts, params)
    jobs: list[Callable[[], list[Completion]]] = [
        functools.partial(g.generate, p, call) for g, p, call in zip(generators, prompts, params, strict=True)
    ]
    return side_by_side(jobs)


def _prompts(requests: Sequence[Request], rows: list[int]) -> list[Sequence[int]]:
    return [requests[row][1] for row in rows]


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
