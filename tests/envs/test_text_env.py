"""The single-agent base class: the bookkeeping it promises, tested on a tiny echo task."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mrlm.envs import Feedback, TextEnv


class CountLetters(TextEnv):
    """Reply with the number of letters in a seeded word; feedback says higher/lower."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.word = ""
        self.shared_info = {"nested": {"count": 0}}

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.word = "".join(rng.choice(list("abcdef"), size=int(rng.integers(3, 9))))
        return f"How many letters in {self.word}?", self.shared_info

    def _respond(self, action: str) -> Feedback:
        correct = action.strip() == str(len(self.word))
        return Feedback(
            "yes" if correct else "no", 1.0 if correct else 0.0, done=correct, info=self.shared_info
        )


def test_step_before_reset_and_after_end_raise() -> None:
    env = CountLetters()
    with pytest.raises(RuntimeError, match="before reset"):
        env.step("3")
    env.reset(seed=0)
    env.step("wrong")
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step("again")


def test_bad_actions_get_clear_errors() -> None:
    env = CountLetters(max_turns=3)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="must be a str"):
        env.step(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_action_length"):
        env.step("x" * (env.action_space.max_length + 1))
    # A refused action does not use up a turn.
    assert env.turn == 0


def test_flags_are_python_bools_and_reward_float() -> None:
    env = CountLetters(max_turns=2)
    env.reset(seed=0)
    _, reward, terminated, truncated, _ = env.step("no idea")
    assert type(terminated) is bool and type(truncated) is bool and type(reward) is float
    assert (terminated, truncated) == (False, False)
    _, _, terminated, truncated, info = env.step("still no idea")
    # The turn budget is a rule of the task: termination, never truncation.
    assert (terminated, truncated) == (True, False)
    assert info["turn"] == 2


def test_correct_reply_ends_early() -> None:
    env = CountLetters(max_turns=5)
    env.reset(seed=3)
    _, reward, terminated, _, _ = env.step(str(len(env.word)))
    assert (reward, terminated) == (1.0, True)


def test_info_dicts_are_fresh_copies() -> None:
    env = CountLetters(max_turns=3)
    _, info = env.reset(seed=0)
    info["nested"]["count"] = 99
    _, _, _, _, step_info = env.step("1")
    assert step_info["nested"]["count"] == 0
    step_info["nested"]["count"] = 7
    _, _, _, _, second = env.step("2")
    assert second["nested"]["count"] == 0
    assert env.shared_info == {"nested": {"count": 0}}


def test_same_seed_same_task_and_unseeded_reset_advances() -> None:
    env = CountLetters()
    first, _ = env.reset(seed=11)
    again, _ = env.reset(seed=11)
    assert first == again
    words = {env.reset()[0] for _ in range(20)}
    assert len(words) > 1


def test_render_ansi_is_the_transcript() -> None:
    env = CountLetters(max_turns=2, render_mode="ansi")
    observation, _ = env.reset(seed=0)
    env.step("7")
    text = env.render()
    assert text is not None
    assert observation in text and "[agent]\n7\n" in text


def test_render_human_prints(capsys: pytest.CaptureFixture[str]) -> None:
    env = CountLetters(render_mode="human")
    env.reset(seed=0)
    env.step("4")
    out = capsys.readouterr().out
    assert "[env]" in out and "[agent]\n4" in out


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_invalid_max_turns(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_turns"):
        CountLetters(max_turns=bad)


def test_invalid_render_mode() -> None:
    with pytest.raises(ValueError, match="render_mode"):
        CountLetters(render_mode="rgb_array")
