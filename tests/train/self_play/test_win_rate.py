"""Win rates counted by hand: fixed replies in a game where the longer reply wins."""

from __future__ import annotations

from typing import Any

import pytest

from mrlm.train.generation import SamplingParams
from mrlm.train.rollout import Policy
from mrlm.train.self_play import FixedReply, Record, eval_seeds, play_record, win_rate
from tests.train.self_play.games import Longer

SAMPLING = SamplingParams(max_new_tokens=32, temperature=0.0)
SEEDS = eval_seeds(3)
LONG, SHORT = "a longer reply", "short"


def _says(tokenizer: Any, text: str) -> Policy:
    return Policy(FixedReply(tokenizer, text), tokenizer)


def test_a_player_that_always_wins_wins_every_game_from_both_seats(tokenizer: Any) -> None:
    record = play_record(Longer, _says(tokenizer, LONG), _says(tokenizer, SHORT), SEEDS, sampling=SAMPLING)
    assert record == Record(wins=6)  # 3 seeds x 2 seats
    assert record.win_rate == 1.0


def test_the_mirror_loses_every_game(tokenizer: Any) -> None:
    assert play_record(
        Longer, _says(tokenizer, SHORT), _says(tokenizer, LONG), SEEDS, sampling=SAMPLING
    ) == Record(losses=6)
    assert win_rate(Longer, _says(tokenizer, SHORT), _says(tokenizer, LONG), SEEDS, sampling=SAMPLING) == 0.0


def test_equal_players_tie_and_a_tie_is_no_win(tokenizer: Any) -> None:
    record = play_record(Longer, _says(tokenizer, SHORT), _says(tokenizer, SHORT), SEEDS, sampling=SAMPLING)
    assert record == Record(ties=6)
    assert record.win_rate == 0.0


def test_the_player_takes_every_seat_once_per_task(tokenizer: Any) -> None:
    """North wins whatever is said: a player seated north on every task, then south, wins half."""
    record = play_record(
        lambda: Longer(north_wins=True),
        _says(tokenizer, SHORT),
        _says(tokenizer, LONG),
        SEEDS,
        sampling=SAMPLING,
    )
    assert record == Record(wins=3, losses=3)
    assert record.win_rate == 0.5


def test_no_tasks_no_games(tokenizer: Any) -> None:
    """A process left without evaluation tasks (more processes than tasks) counts nothing."""
    assert (
        play_record(Longer, _says(tokenizer, LONG), _says(tokenizer, SHORT), [], sampling=SAMPLING)
        == Record()
    )


def test_records_add_up_and_an_empty_one_has_no_rate() -> None:
    assert Record(1, 2, 3) + Record(4, 0, 1) == Record(5, 2, 4)
    assert Record().win_rate == 0.0
    assert Record(1, 2, 3).games == 6


def test_the_fixed_reply_ends_with_a_stop_token_within_the_budget(tokenizer: Any) -> None:
    reply = FixedReply(tokenizer, "This idea is simply wrong.")
    [full] = reply.generate([[1, 2]], SamplingParams(max_new_tokens=64))
    assert full.finish_reason == "stop"
    assert full.token_ids[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(full.token_ids[:-1]) == "This idea is simply wrong."
    [cut] = reply.generate([[1, 2]], SamplingParams(max_new_tokens=3))
    assert (cut.token_ids, cut.finish_reason) == (full.token_ids[:3], "length")
    [other] = reply.generate([[3]], SamplingParams(max_new_tokens=64, stop_token_ids=(7,)))
    assert other.token_ids[-1] == 7


def test_a_one_agent_env_has_no_win_rate(tokenizer: Any) -> None:
    with pytest.raises(ValueError, match="at least two agents"):
        play_record("mrlm/Math-v0", _says(tokenizer, SHORT), _says(tokenizer, "2"), SEEDS, sampling=SAMPLING)
