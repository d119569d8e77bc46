"""Judging text answers: a few filler words are allowed, a list of guesses is not."""

from __future__ import annotations

import numpy as np
import pytest

from mrlm.envs.tools import ToolUseEnv
from mrlm.envs.tools.answers import TEXT_SLACK_WORDS, answer_matches
from mrlm.envs.tools.corpus import load_corpus
from mrlm.envs.tools.tasks import ITEMS, ToolTask, generate_task

CORPUS = load_corpus()
RIGHT_PHRASINGS = (
    "{a}",
    "The {a}.",
    "It is {a}.",
    "Answer: {a}",
    "I think {a}.",
    "**{A}**",
    "\\boxed{{{a}}}",
)


def _task(env: ToolUseEnv, seed: int) -> ToolTask:
    env.reset(seed=seed)
    assert env.task is not None
    return env.task


def _reward(env: ToolUseEnv, seed: int, answer: str) -> float:
    """The reward of answering ``answer`` at once, with no tool call, in episode ``seed``."""
    env.reset(seed=seed)
    return env.step(f"<answer>{answer}</answer>")[1]


def _top_item_seeds(env: ToolUseEnv, count: int = 400) -> list[int]:
    return [seed for seed in range(count) if _task(env, seed).metadata.get("template") == "top_item"]


# answer_matches ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer", ["Tamsel", "the river Tamsel", "It is Tamsel.", "TAMSEL!", "Tamsel River", "It is the Tamsel."]
)
def test_filler_words_around_a_right_text_answer_are_allowed(answer: str) -> None:
    assert answer_matches(answer, "Tamsel", "text", distractors=("Pale River", "Adder Strait", "Orm"))


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("anchor bracket clamp dowel", "clamp"),
        ("clamp, anchor", "clamp"),
        ("clamp or hinge", "clamp"),
        ("Tamsel or Pale River", "Tamsel"),
        ("Lake Sorrel, Lake Viran", "Lake Sorrel"),
    ],
)
def test_an_answer_that_also_names_another_candidate_is_wrong(answer: str, expected: str) -> None:
    distractors = (*(item for item in ITEMS if item != "clamp"), "Pale River", "Lake Viran", "Tamsel")
    assert answer_matches(answer, expected, "text")  # within the word limit, so only candidates refuse it
    assert not answer_matches(answer, expected, "text", distractors=distractors)


def test_distractors_that_are_part_of_the_right_answer_do_not_count() -> None:
    # "Sorrel" lies inside the accepted words; a distractor that is the answer or an alias is ignored.
    assert answer_matches("Lake Sorrel", "Lake Sorrel", "text", distractors=("Sorrel", "Lake Sorrel"))
    assert answer_matches(
        "M. Crane", "Matilda Crane", "text", aliases=("M. Crane",), distractors=("m crane",)
    )
    assert not answer_matches("Sorrel", "Lake Sorrel", "text")
    # A distractor that reaches beyond the accepted words is named by the answer.
    assert not answer_matches("Lake Sorrel", "Sorrel", "text", distractors=("Lake Sorrel",))


def test_numbers_ignore_distractors_and_the_word_limit_still_holds() -> None:
    assert answer_matches("The total is 1,234", "1234", "integer", distractors=("1235", "total"))
    long = " ".join(["very"] * (TEXT_SLACK_WORDS + 1)) + " Tamsel"
    assert not answer_matches(long, "Tamsel", "text")


# Tasks and the env ------------------------------------------------------------------------------


def test_text_tasks_list_their_other_candidates() -> None:
    rng = np.random.default_rng(0)
    tasks = [generate_task(rng, kind, CORPUS) for kind in ("data", "lookup") for _ in range(60)]
    items = [task for task in tasks if task.metadata.get("template") == "top_item"]
    lookups = [task for task in tasks if task.kind == "lookup" and task.answer_type == "text"]
    assert items and lookups
    for task in items:
        assert set(task.distractors) == set(ITEMS) - {task.answer}
    text_answers = {q.answer for q in CORPUS.questions if not q.answer.isdigit()}
    for task in lookups:
        assert set(task.distractors) == text_answers - {task.answer}
    assert all(task.distractors == () for task in tasks if task.answer_type != "text")


def test_a_blind_list_of_item_names_earns_nothing_on_top_item_tasks() -> None:
    # Four item names with no tool call were rewarded in 59 of these 112 episodes (53%), where one
    # blind name earns at best 17 (15%); an answer naming the right item, however phrased, still wins.
    env = ToolUseEnv(tools=["files"], kinds=["data"])
    seeds = _top_item_seeds(env)
    assert len(seeds) == 112
    guessed = right = 0
    for seed in seeds:
        guessed += _reward(env, seed, " ".join(ITEMS[:4])) > 0
        item = _task(env, seed).answer
        for phrasing in RIGHT_PHRASINGS:
            right += _reward(env, seed, phrasing.format(a=item, A=item.upper())) == 1.0
    env.close()
    assert (guessed, right) == (0, len(seeds) * len(RIGHT_PHRASINGS))


def test_lookup_answers_naming_other_answers_of_the_collection_are_wrong() -> None:
    env = ToolUseEnv(tools=["search"], kinds=["lookup"])
    guesses = {"violet": "violet green", "Lake Sorrel": "Lake Sorrel Lake Viran"}
    seen: dict[str, tuple[float, float]] = {}
    for seed in range(200):
        answer = _task(env, seed).answer
        if answer in guesses and answer not in seen:
            seen[answer] = (_reward(env, seed, guesses[answer]), _reward(env, seed, f"It is {answer}."))
    env.close()
    assert seen == {"violet": (0.0, 1.0), "Lake Sorrel": (0.0, 1.0)}


def test_records_name_their_distractors() -> None:
    documents = [
        {
            "id": "marrowby",
            "title": "Marrowby cheese",
            "text": "Marrowby is a hard cheese made from sheep's milk.",
            "questions": [
                {
                    "question": "Marrowby cheese is made from the milk of which animal?",
                    "answer": "sheep",
                    "distractors": ["goat", "cow", "buffalo"],
                }
            ],
        }
    ]
    assert load_corpus(documents).questions[0].distractors == ("goat", "cow", "buffalo")
    env = ToolUseEnv(tools=["search"], documents=documents)
    for reply, reward in [("goat cow sheep buffalo", 0.0), ("sheep's milk", 1.0), ("It is sheep.", 1.0)]:
        assert _reward(env, 0, reply) == reward, reply
    env.close()


QUESTION = "Which river flows past the old mill of Varrow?"


@pytest.mark.parametrize(
    ("answer", "right"),
    [
        ("Tamsel", True),
        ("the river Tamsel", True),  # "river" is the question's word
        ("Tamsel River", True),
        ("I think Tamsel.", True),  # filler words
        ("Answer: Tamsel", True),
        ("Tamsel or Orm", False),  # a guess the task does not list as a candidate
        ("Orm Tamsel Dove", False),
        ("Tamsel, probably", False),
    ],
)
def test_given_the_question_other_words_must_be_filler_or_the_questions(answer: str, right: bool) -> None:
    assert answer_matches(answer, "Tamsel", "text", question=QUESTION) is right
    assert answer_matches(answer, "Tamsel", "text")  # without it, only the word limit and distractors


def test_a_list_of_guesses_the_collection_does_not_name_earns_nothing() -> None:
    # The built-in collection lists no distractors for this question: the question's words refuse it.
    env = ToolUseEnv(tools=["search"], kinds=["lookup"])
    rewards: dict[str, float] = {}
    for seed in range(300):
        if "milk of which animal" in _task(env, seed).question:
            for reply in ("goat cow sheep buffalo", "sheep goat", "sheep", "sheep's milk"):
                rewards[reply] = _reward(env, seed, reply)
            break
    env.close()
    assert rewards == {
        "goat cow sheep buffalo": 0.0,
        "sheep goat": 0.0,
        "sheep": 1.0,
        "sheep's milk": 1.0,
    }
