"""Rewards of a writing team: a pluggable function of the task and the parts, and the default one.

A reward function is any callable ``reward_fn(task, parts)`` where ``parts`` maps each agent to its
text. It returns a :class:`Score` (a total plus named components, team-wide and per agent) or a
plain ``(total, components)`` pair; :func:`as_score` turns either into a :class:`Score`.

The default, :class:`WritingReward`, measures what the task asks for. Per part (agent):

====================  ========================================================================
``words``             length in words (:func:`~mrlm.envs.writing.text.count_words`)
``length``            :func:`~mrlm.envs.writing.metrics.band_score` of ``words`` in the role's band
``distinct_1``        distinct unigrams over unigrams: the type-token ratio
``distinct_2``        distinct bigrams over bigrams
``diversity``         ``(distinct_1 + distinct_2) / 2``
``unigram_overlap``   share of the part's content words found in the source
``bigram_overlap``    share of the part's content bigrams found in the source
``overlap``           ``(unigram_overlap + bigram_overlap) / 2``: is the part about the source?
``copied``            share of the part's tokens in spans of ``copy_span`` tokens copied verbatim
``echoed``            the same, copied verbatim from the other part
``function_words``    share of the part's tokens that are function words ("the", "of", "which", ...)
``function_variety``  distinct bigrams of the part's function words, in order, over all of them
``same_class``        share of adjacent token pairs that are two function or two content words
``prose``             ``(min(1, function_words / function_threshold)
                      * min(1, function_variety / variety_threshold)
                      * min(1, same_class / same_class_threshold)) ** 2``: is the part prose?
``rouge1/2/L``        ROUGE F-measures against the role's reference, when it has one
``rouge``             the mean of the three
====================  ========================================================================

Team components: the mean over parts of ``length``, ``diversity``, ``overlap``, ``copied``,
``function_words``, ``function_variety``, ``same_class`` and ``prose`` (and ``rouge`` over the
parts with a reference); ``echoed``, the share of both parts' tokens together that the other part
repeats verbatim (:func:`~mrlm.envs.writing.metrics.shared_fraction`); ``ratio``, the band score of
``words(second) / words(first)`` in the task's ratio band (0 when the first part is empty);
``coherence``, the overlap coefficient of the two parts' content words (how much of the shorter part
the other covers). ``quality`` is the weighted mean of ``length``, ``ratio``, ``coherence`` and
``rouge`` (weights :data:`DEFAULT_WEIGHTS`; ``rouge`` drops out, and the others are renormalised,
when no part has a reference): the shape of the text and the agreement of its parts. Overlap with
the source, fluency (lexical diversity and grammar) and copying act as multiplying factors instead:
each detects a way to score without doing the task, and none should be maximised for its own sake
(text sharing every word with the source is a copy), so the measures saturate at a threshold:

* ``topicality = off_topic_floor + (1 - off_topic_floor) * min(1, overlap / topic_threshold)``:
  fluent text about something else keeps only a small share of its score (the floor keeps it
  above degenerate text: it is at least language of the asked shape);
* ``fluency = min(min(1, diversity / diversity_threshold) ** 2, grammar)``: repeating words scores
  next to nothing (squared, so that a text of one repeated word falls far below off-topic prose),
  and so does text without grammar, ``grammar = prose_floor + (1 - prose_floor) * prose`` (text
  failing both counts once, at the lower). Function words carry a sentence's grammar: a list of the
  source's content words, which matches the source and a reference word for word, has none of
  them, and content words strung on fillers ("sensor the soil of farms and ...") alternate strictly
  between the two kinds of word and repeat a few pairs of fillers. Each measure saturates well
  below what prose has: in the built-in posts, abstracts and reference TL;DRs and the honest texts
  of the tests, ``function_words`` is 0.29 and above (0.2 in the sentence with the fewest),
  ``function_variety`` 0.87 and above (0.83 in a sentence, about 0.8 over 500 tokens) and
  ``same_class`` 0.3 and above (0.16 in a sentence). ``prose`` is taken part by part before the
  mean, so that one part in prose cannot cover for a list of words; the small floor keeps such a
  list above repeated words;
* ``originality = 1 - copy_weight * max(copied, echoed)``: pasting the source, or writing the same
  text in both parts, costs up to ``copy_weight`` of the score. ``echoed`` counts a passage that
  both parts share once in each, so quoting a one-line summary in a long expansion costs in
  proportion to the quote, and two identical parts cost as much as two copies of the source.

Together these order the typical outputs: a good summary and expansion, then a copy of the
source, then off-topic prose, then a list of the source's words, then repeated words, then nothing.

``total = quality * topicality * fluency * originality``, in [0, 1]; 0 for empty parts.

These are lexical measures, not a grammar: content words with function words scattered among them
at random, in runs of varying length, still earn part of the score (less than honest prose on the
built-in tasks), so samples of a policy trained on this reward are worth reading.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from mrlm.envs.writing.metrics import (
    band_score,
    bigram_precision,
    copied_fraction,
    distinct_n,
    function_word_share,
    function_word_variety,
    overlap_coefficient,
    same_class_share,
    shared_fraction,
    unigram_precision,
)
from mrlm.envs.writing.rouge import rouge_scores
from mrlm.envs.writing.tasks import Role, WritingTask
from mrlm.envs.writing.text import count_words, tokens

#: Weights of the quality components in the default reward.
DEFAULT_WEIGHTS: dict[str, float] = {
    "length": 0.35,
    "ratio": 0.15,
    "coherence": 0.20,
    "rouge": 0.30,
}


@dataclass(frozen=True)
class Score:
    """The score of one joint text.

    Attributes:
        total: the team's score; the env's reward is built from it.
        components: named team-wide values (floats), reported in every agent's ``info``.
        per_agent: named values per agent, reported in that agent's ``info``.
    """

    total: float
    components: Mapping[str, float] = field(default_factory=dict)
    per_agent: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


class RewardFn(Protocol):
    """Scores the parts written for a task; see the module docstring."""

    def __call__(
        self, task: WritingTask, parts: Mapping[str, str]
    ) -> Score | tuple[float, Mapping[str, float]]: ...


def as_score(result: object) -> Score:
    """``result`` of a reward function as a :class:`Score`.

    Raises:
        TypeError: neither a Score nor a ``(total, components)`` pair.
        ValueError: a total or component that is not a finite number.
    """
    if isinstance(result, Score):
        score = result
    elif isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], Mapping):
        score = Score(result[0], result[1])
    else:
        raise TypeError(
            f"a reward function must return a Score or a (total, components) pair, got {result!r:.80}"
        )
    return Score(
        _finite(score.total, "total"),
        {str(k): _finite(v, f"component {k!r}") for k, v in score.components.items()},
        {
            str(agent): {str(k): _finite(v, f"component {k!r} of {agent!r}") for k, v in values.items()}
            for agent, values in score.per_agent.items()
        },
    )


def _finite(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"the reward's {what} must be a finite number, got {value!r:.60}")
    return float(value)


@dataclass(frozen=True)
class WritingReward:
    """The default reward of ``mrlm/Writing-v0`` (defined in the module docstring).

    Attributes:
        weights: weight of each quality component (keys from :data:`DEFAULT_WEIGHTS`).
        copy_span: shortest run of tokens, shared word for word with the source or between the parts,
            counted as copied.
        copy_weight: the most that copying can cost, as a fraction of the score.
        topic_threshold: mean ``overlap`` at and above which the parts count as fully on topic.
        off_topic_floor: ``topicality`` of parts sharing nothing with the source.
        diversity_threshold: mean ``diversity`` at and above which the parts count as fully fluent.
        function_threshold: a part's ``function_words`` at and above which it counts as prose.
        variety_threshold: a part's ``function_variety`` at and above which it counts as prose.
        same_class_threshold: a part's ``same_class`` at and above which it counts as prose.
        prose_floor: ``grammar`` of parts that are not prose at all.
    """

    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    copy_span: int = 8
    copy_weight: float = 0.7
    topic_threshold: float = 0.3
    off_topic_floor: float = 0.1
    diversity_threshold: float = 0.5
    function_threshold: float = 0.2
    variety_threshold: float = 0.5
    same_class_threshold: float = 0.15
    prose_floor: float = 0.02

    def __post_init__(self) -> None:
        unknown = sorted(set(self.weights) - set(DEFAULT_WEIGHTS))
        if unknown:
            raise ValueError(f"unknown weights {unknown}; known: {', '.join(DEFAULT_WEIGHTS)}")
        if any(not w >= 0 for w in self.weights.values()) or not sum(self.weights.values()) > 0:
            raise ValueError(f"weights must be non-negative with a positive sum, got {dict(self.weights)}")
        if self.copy_span < 1 or not 0 <= self.copy_weight <= 1:
            raise ValueError("copy_span must be >= 1 and copy_weight in [0, 1]")
        for name in (
            "topic_threshold",
            "diversity_threshold",
            "function_threshold",
            "variety_threshold",
            "same_class_threshold",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("off_topic_floor", "prose_floor"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")

    def __call__(self, task: WritingTask, parts: Mapping[str, str]) -> Score:
        source = tokens(task.source)
        part_tokens = {role.agent: tokens(parts.get(role.agent, "")) for role in task.roles}
        per_agent = {
            role.agent: self._part(
                role,
                parts.get(role.agent, ""),
                part_tokens[role.agent],
                source,
                part_tokens[task.partner(role.agent).agent],
            )
            for role in task.roles
        }
        first, second = (per_agent[role.agent] for role in task.roles)
        ratio = second["words"] / first["words"] if first["words"] > 0 else 0.0
        team = {
            name: _mean(values[name] for values in per_agent.values())
            for name in (
                "length",
                "diversity",
                "overlap",
                "copied",
                "function_words",
                "function_variety",
                "same_class",
                "prose",
            )
        }
        first_tokens, second_tokens = (part_tokens[role.agent] for role in task.roles)
        team["echoed"] = shared_fraction(first_tokens, second_tokens, self.copy_span)
        team["ratio"] = band_score(ratio, *task.ratio_band) if first["words"] > 0 else 0.0
        team["coherence"] = overlap_coefficient(first_tokens, second_tokens)
        with_reference = [values["rouge"] for values in per_agent.values() if "rouge" in values]
        weights = dict(self.weights)
        if with_reference:
            team["rouge"] = _mean(with_reference)
        else:
            weights.pop("rouge", None)
        weight_sum = sum(weights.values())
        team["quality"] = (
            sum(w * team[name] for name, w in weights.items()) / weight_sum if weight_sum > 0 else 0.0
        )
        on_topic = min(1.0, team["overlap"] / self.topic_threshold)
        team["topicality"] = self.off_topic_floor + (1.0 - self.off_topic_floor) * on_topic
        team["grammar"] = self.prose_floor + (1.0 - self.prose_floor) * team["prose"]
        varied = min(1.0, team["diversity"] / self.diversity_threshold) ** 2
        team["fluency"] = min(varied, team["grammar"])
        team["originality"] = 1.0 - self.copy_weight * max(team["copied"], team["echoed"])
        total = team["quality"] * team["topicality"] * team["fluency"] * team["originality"]
        return Score(total, team, per_agent)

    def _part(
        self, role: Role, text: str, toks: list[str], source: list[str], partner: list[str]
    ) -> dict[str, float]:
        words = count_words(text)
        values = {
            "words": float(words),
            "length": band_score(words, role.min_words, role.max_words),
            "distinct_1": distinct_n(toks, 1),
            "distinct_2": distinct_n(toks, 2),
            "unigram_overlap": unigram_precision(toks, source),
            "bigram_overlap": bigram_precision(toks, source),
            "copied": copied_fraction(toks, source, self.copy_span),
            "echoed": copied_fraction(toks, partner, self.copy_span),
            "function_words": function_word_share(toks),
            "function_variety": function_word_variety(toks),
            "same_class": same_class_share(toks),
        }
        values["diversity"] = (values["distinct_1"] + values["distinct_2"]) / 2
        values["overlap"] = (values["unigram_overlap"] + values["bigram_overlap"]) / 2
        prose = 1.0
        for name, threshold in (
            ("function_words", self.function_threshold),
            ("function_variety", self.variety_threshold),
            ("same_class", self.same_class_threshold),
        ):
            prose *= min(1.0, values[name] / threshold)
        values["prose"] = prose**2
        if role.reference is not None:
            scores = rouge_scores(text, role.reference)
            for name, score in scores.items():
                values[name] = score.fmeasure
            values["rouge"] = _mean(score.fmeasure for score in scores.values())
        return values


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0
