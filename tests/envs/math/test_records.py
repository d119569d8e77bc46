"""Tasks from GSM8K and MATH records: lists, JSONL files, Dataset-like objects, and clear errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import mrlm.envs
from mrlm.envs.math import MathEnv, detect_format, load_records

GSM8K = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
        "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",
    },
    {
        "question": "A company pays 20 workers 50 dollars each per day for 1 day. How much does it pay?",
        "answer": "It pays 20*50 = <<20*50=1000>>1,000 dollars.\n#### 1,000",
    },
]
MATH = [
    {
        "problem": "What is $\\frac{1}{2} + \\frac{1}{3}$?",
        "solution": "We have $\\frac{1}{2} + \\frac{1}{3} = \\boxed{\\frac{5}{6}}$.",
        "level": "Level 1",
        "type": "Prealgebra",
    },
    {
        "problem": "Expand $(x+1)^2$.",
        "solution": "First $\\boxed{x}$ is wrong; then $(x+1)^2 = \\boxed{x^{2}+2x+1}$.",
        "level": "Level 3",
        "type": "Algebra",
    },
    {
        "problem": "Solve $x - 1 > 2$.",
        "solution": "So $x > 3$, that is $\\boxed{(3, \\infty)}$.",
        "level": "Level ?",
        "type": "Algebra",
    },
]
MIXED = GSM8K + MATH


class FakeDataset:
    """What a ``datasets.Dataset`` offers for rows: a length and integer indexing to dicts."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        if not 0 <= index < len(self._rows):
            raise IndexError(index)
        return dict(self._rows[index])


class StreamOfRecords:
    """An iterable without a length (an ``IterableDataset``-like)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n", encoding="utf-8")
    return path


def test_both_formats_are_read_with_their_answers() -> None:
    tasks = load_records(MIXED)
    assert [task.source for task in tasks] == ["gsm8k", "gsm8k", "math", "math", "math"]
    assert [task.answer for task in tasks] == ["72", "1000", "\\frac{5}{6}", "x^{2}+2x+1", "(3, \\infty)"]
    assert [task.index for task in tasks] == [0, 1, 2, 3, 4]
    assert [task.level for task in tasks] == [None, None, 1, 3, None]
    assert [task.topic for task in tasks] == [
        "word_problem",
        "word_problem",
        "Prealgebra",
        "Algebra",
        "Algebra",
    ]
    assert tasks[0].solution is not None and "<<" not in tasks[0].solution and "####" not in tasks[0].solution
    assert tasks[0].question == GSM8K[0]["question"]


def test_a_math_record_with_its_own_answer_field_uses_it() -> None:
    (task,) = load_records([{"problem": "p", "solution": "... \\boxed{4}", "answer": "2^2", "level": 2}])
    assert (task.answer, task.level, task.topic) == ("2^2", 2, "math")


@pytest.mark.parametrize("kind", ["list", "jsonl_str", "jsonl_path", "dataset", "iterable"])
def test_every_kind_of_source_gives_the_same_tasks(kind: str, tmp_path: Path) -> None:
    source: Any = {
        "list": MIXED,
        "jsonl_str": str(_jsonl(tmp_path / "a.jsonl", MIXED)),
        "jsonl_path": _jsonl(tmp_path / "b.jsonl", MIXED),
        "dataset": FakeDataset(MIXED),
        "iterable": StreamOfRecords(MIXED),
    }[kind]
    assert load_records(source) == load_records(MIXED)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [GSM8K[0], {"prompt": "x", "completion": "y"}],
            r"record 1 matches neither format.*'question'.*'answer'",
        ),
        (
            [{"question": "q"}],
            r"record 0 matches neither format: GSM8K needs 'question', 'answer' \(missing 'answer'\)",
        ),
        (
            [MATH[0], {"problem": "p"}],
            r"record 1 matches neither.*MATH needs 'problem', 'solution' \(missing 'solution'\)",
        ),
        (
            [{"question": "q", "answer": "no final line"}],
            r"record 0 \(GSM8K\): the answer has no final '#### <answer>'",
        ),
        ([{"problem": "p", "solution": "no box"}], r"record 0 \(MATH\): the solution has no \\boxed"),
        ([{"problem": "p", "solution": "\\boxed{1"}], r"record 0 \(MATH\)"),
        (
            [{"question": 3, "answer": "#### 3"}],
            r"record 0 \(GSM8K\): field 'question' must be a non-empty string",
        ),
        (["just text"], r"record 0 is a str, not a dict"),
        ([], r"no records"),
    ],
)
def test_bad_records_name_the_index_and_the_missing_fields(rows: list[Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_records(rows)


def test_bad_sources(tmp_path: Path) -> None:
    split_dict: Any = {"train": MIXED}
    with pytest.raises(TypeError, match="pass one split"):
        load_records(split_dict)
    with pytest.raises(TypeError, match="got int"):
        load_records(5)  # type: ignore[arg-type]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(GSM8K[0]) + "\n{not json\n")
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        load_records(broken)
    with pytest.raises(FileNotFoundError):
        load_records(tmp_path / "missing.jsonl")
    assert detect_format(GSM8K[0]) == "gsm8k" and detect_format(MATH[0]) == "math"


def test_seed_picks_record_seed_mod_n_and_index_option_picks_any() -> None:
    env = MathEnv(records=MIXED)
    for seed in range(12):
        _, info = env.reset(seed=seed)
        assert info["index"] == seed % len(MIXED)
    question, info = env.reset(options={"index": 3})
    assert question == MATH[1]["problem"] and info["source"] == "math" and info["level"] == 3
    _, info = env.reset(seed=1)
    assert (info["source"], info["topic"], info["level"]) == ("gsm8k", "word_problem", None)
    for bad in (5, -1, "1", True):
        with pytest.raises(ValueError, match=r"options\['index'\]"):
            env.reset(options={"index": bad})
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"level": 2})


def test_unseeded_resets_draw_records_from_the_seeded_stream() -> None:
    def indices(seed: int) -> list[int]:
        env = MathEnv(records=MIXED)
        env.reset(seed=seed)
        return [env.reset()[1]["index"] for _ in range(30)]

    assert indices(7) == indices(7)
    assert set(indices(7)) == set(range(len(MIXED)))


def test_record_answers_are_checked() -> None:
    env = mrlm.envs.make("mrlm/Math-v0", records=MIXED, format_reward=0.5)
    env.reset(seed=1)
    _, reward, terminated, _, info = env.step("It pays 20 * 50 dollars.\n#### 1000")
    assert (reward, terminated, info["correct"], info["answer_source"]) == (1.0, True, True, "hashes")
    env.reset(seed=2)
    _, reward, _, _, info = env.step("so it is \\boxed{\\dfrac{5}{6}}")
    assert (reward, info["verify_method"]) == (1.5, "exact")
    env.reset(seed=4)
    _, reward, _, _, info = env.step("The solution set is \\boxed{x > 3}.")
    assert reward == 1.5 and info["correct"]


def test_symbolic_record_answers_use_math_verify() -> None:
    env = MathEnv(records=MIXED)
    env.reset(seed=3)
    _, reward, _, _, info = env.step("\\boxed{(x+1)^2}")
    assert (reward, info["verify_method"]) == (1.0, "math_verify")
    env.reset(seed=3)
    _, reward, _, _, info = env.step("\\boxed{x^2+1}")
    assert (reward, info["verify_method"]) == (0.0, "math_verify")


def test_level_and_topics_do_not_combine_with_records() -> None:
    with pytest.raises(ValueError, match="leave them None"):
        MathEnv(records=MIXED, level=2)
    with pytest.raises(ValueError, match="leave them None"):
        MathEnv(records=MIXED, topics="algebra")


@pytest.mark.parametrize("max_turns", [1, 3])
def test_check_env_passes_in_records_mode(max_turns: int, tmp_path: Path) -> None:
    env = MathEnv(records=_jsonl(tmp_path / "r.jsonl", MIXED), max_turns=max_turns)
    check_env(env, skip_render_check=True)
    made = mrlm.envs.make("mrlm/Math-v0", records=FakeDataset(GSM8K), max_turns=max_turns, render_mode="ansi")
    check_env(made.unwrapped)


def test_records_env_is_deterministic_for_a_seed() -> None:
    def rollout() -> list[Any]:
        env = MathEnv(records=MIXED, max_turns=2)
        trace: list[Any] = [env.reset(seed=int(np.int64(11)))]
        trace.append(env.step("#### 72"))
        return trace

    assert rollout() == rollout()
