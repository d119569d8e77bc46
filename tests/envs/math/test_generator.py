"""The generator's answers are right, checked by independent computation over hundreds of seeds."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from mrlm.envs.math import (
    LEVELS,
    TOPICS,
    check_answer,
    generate_task,
    parse_interval,
    parse_number,
    parse_tuple,
)
from mrlm.envs.math.generator import resolve_topics
from mrlm.envs.math.tasks import MathTask
from tests.envs.math import solvers

SEEDS = 200
SYMPY_SEEDS = 20  # sympy costs milliseconds per solve; the Fraction checks cover every seed


def _tasks(topic: str, level: int, count: int = SEEDS) -> list[MathTask]:
    rng = np.random.default_rng([level, TOPICS.index(topic)])
    return [generate_task(rng, level, topic) for _ in range(count)]


def _number(task: MathTask) -> Fraction:
    value = parse_number(task.answer)
    assert value is not None, task
    return value


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("topic", ["integers", "decimals", "fractions"])
def test_arithmetic_answers_match_a_fraction_evaluation_of_the_question(topic: str, level: int) -> None:
    for task in _tasks(topic, level):
        assert (task.topic, task.level) == (topic, level)
        value = _number(task)
        assert value == solvers.arithmetic(task.question), task
        if topic == "integers":
            assert value.denominator == 1, task
        if topic == "decimals":
            assert "/" not in task.answer, task  # a terminating decimal, written as one
        if topic == "fractions":
            assert task.answer == (
                f"{value.numerator}/{value.denominator}" if value.denominator > 1 else str(value)
            )


@pytest.mark.parametrize("level", LEVELS)
def test_linear_equation_answers_solve_the_equation(level: int) -> None:
    for i, task in enumerate(_tasks("linear_equation", level)):
        value = _number(task)
        assert value == solvers.linear_equation(task.question, use_sympy=False), task
        if i < SYMPY_SEEDS:
            assert value == solvers.linear_equation(task.question, use_sympy=True), task
        if level < 5:
            assert value.denominator == 1, task


@pytest.mark.parametrize("level", LEVELS)
def test_linear_system_answers_solve_both_equations(level: int) -> None:
    for i, task in enumerate(_tasks("linear_system", level)):
        pair = parse_tuple(task.answer)
        assert pair is not None and len(pair) == 2, task
        assert pair == solvers.linear_system(task.question, use_sympy=False), task
        if i < SYMPY_SEEDS:
            assert pair == solvers.linear_system(task.question, use_sympy=True), task


@pytest.mark.parametrize("level", LEVELS)
def test_inequality_answers_are_the_solution_sets(level: int) -> None:
    for i, task in enumerate(_tasks("inequality", level)):
        interval = parse_interval(task.answer)
        assert interval is not None, task
        ends = [end for end in (interval.low, interval.high) if end is not None]
        if i < SYMPY_SEEDS:
            assert sorted(ends) == sorted(solvers.inequality_boundaries(task.question)), task
        # Membership, from the question's own text, at each end, just inside and outside, and far out.
        probes = [Fraction(-(10**6)), Fraction(10**6)]
        for end in ends:
            probes += [end, end - Fraction(1, 1000), end + Fraction(1, 1000)]
        for x in probes:
            inside = (
                interval.low is None or x > interval.low or (x == interval.low and interval.low_closed)
            ) and (
                interval.high is None or x < interval.high or (x == interval.high and interval.high_closed)
            )
            assert inside == solvers.inequality_holds(task.question, x), (task, x)


@pytest.mark.parametrize("level", LEVELS)
def test_word_problem_answers_redo_the_story(level: int) -> None:
    templates: Counter[str] = Counter()
    for task in _tasks("word_problem", level):
        value = _number(task)
        assert value == solvers.word_problem(task.question), task
        assert value > 0 and (value * 100).denominator == 1, task  # whole cents, or whole units
        templates[task.subtopic] += 1
    assert set(templates) == {"shopping", "travel", "sharing", "ages", "discount"}


@pytest.mark.parametrize("level", LEVELS)
def test_multi_step_answers_replay_the_steps(level: int) -> None:
    kinds: Counter[str] = Counter()
    for i, task in enumerate(_tasks("multi_step", level)):
        if task.subtopic == "composition" and i >= SYMPY_SEEDS:
            continue
        assert _number(task) == solvers.multi_step(task.question), task
        kinds[task.subtopic] += 1
    assert ("composition" in kinds) == (level >= 3) and "chain" in kinds


@pytest.mark.parametrize("topic", TOPICS)
def test_every_gold_answer_checks_against_itself_exactly(topic: str) -> None:
    for level in LEVELS:
        for task in _tasks(topic, level, 40):
            verdict = check_answer(task.answer, task.answer)
            assert verdict.correct and verdict.method == "exact", task


def test_same_seed_same_task_for_every_topic_and_level() -> None:
    for topic in TOPICS:
        for level in LEVELS:
            assert _tasks(topic, level, 5) == _tasks(topic, level, 5)
    first = [generate_task(np.random.default_rng(seed), 3) for seed in range(50)]
    assert first == [generate_task(np.random.default_rng(seed), 3) for seed in range(50)]
    assert len({task.question for task in first}) > 40


def test_levels_grow_the_numbers() -> None:
    def biggest(level: int) -> int:
        return max(abs(_number(task).numerator) for task in _tasks("integers", level, 100))

    assert biggest(1) < biggest(4)


def test_topics_restrict_what_is_drawn() -> None:
    rng = np.random.default_rng(0)
    drawn = {generate_task(rng, 2, "algebra").topic for _ in range(200)}
    assert drawn == {"linear_equation", "linear_system", "inequality"}
    drawn = {generate_task(rng, 2, ["word_problem", "fractions"]).topic for _ in range(100)}
    assert drawn == {"word_problem", "fractions"}
    assert {generate_task(rng, 4).topic for _ in range(400)} == set(TOPICS)


def test_topic_and_level_validation() -> None:
    assert resolve_topics(None) == TOPICS
    assert resolve_topics(["fractions", "arithmetic"]) == ("integers", "decimals", "fractions")
    with pytest.raises(ValueError, match="unknown math topic 'geometry'"):
        resolve_topics(["geometry"])
    with pytest.raises(ValueError, match="at least one"):
        resolve_topics([])
    with pytest.raises(ValueError, match="level"):
        generate_task(np.random.default_rng(0), 6)
