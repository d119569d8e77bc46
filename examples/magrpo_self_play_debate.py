"""Self-play on mrlm/Debate-v0: one policy argues both sides, each side's samples compared among themselves.

MAGRPO with one shared model (``policies="shared"``) and each agent's own reward (``credit="agent"``:
the debate is zero-sum, +1 to the side the judge prefers, -1 to the other). Groups are per side, so
the PRO samples of a motion are compared with each other and the CON samples with each other: the
advantages are per side, and the model learns from both seats at once.

After training, the policy plays both seats against two opponents and the example prints its win
rate: against the initial policy (the model before training) and against a fixed rule-based
opponent that repeats one slogan. With the tiny local model and a few steps the numbers show the
plumbing (self-play rollouts, per-side credit, evaluation against frozen and scripted opponents),
not a strong debater.

Run (about a minute on two CPU cores; the run lands in ./runs/magrpo_self_play)::

    uv run python examples/magrpo_self_play_debate.py --steps 4
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mrlm.train.algorithms.magrpo import MAGRPOConfig, train
from mrlm.train.chat_template import IM_END
from mrlm.train.generation import Completion, HFGenerator, SamplingParams
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.fsio import remove_tree
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.rollout import Policy, RolloutEngine

ENV_ID = "mrlm/Debate-v0"
ENV_KWARGS = {"rounds": 2}  # an opening and a closing speech per side
SIDES = ("pro", "con")
EVAL_SEEDS = range(10_000, 10_008)


class SloganGenerator:
    """A rule-based debater: the same sentence to every prompt."""

    def __init__(self, tokenizer: Any) -> None:
        self.ids = [
            *tokenizer.encode("This idea is simply wrong and everyone knows it."),
            tokenizer.convert_tokens_to_ids(IM_END),
        ]

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        return [Completion(list(self.ids), [0.0] * len(self.ids), "stop") for _ in prompts]


def win_rate(player: Policy, opponent: Policy) -> float:
    """Share of the debates the player wins, playing each side of every evaluation motion once."""
    wins = games = 0
    for seat in SIDES:
        other = SIDES[1 - SIDES.index(seat)]
        engine = RolloutEngine(
            ENV_ID,
            {"player": player, "opponent": opponent},
            sampling=SamplingParams(max_new_tokens=48, temperature=0.0),
            agent_policies={seat: "player", other: "opponent"},
            env_kwargs=ENV_KWARGS,
        )
        with engine:
            rows = engine.collect(list(EVAL_SEEDS))
        wins += sum(row.total_reward > 0 for row in rows if row.agent == seat)
        games += len(EVAL_SEEDS)
    return wins / games


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    out = Path("runs/magrpo_self_play")
    remove_tree(out)  # a rerun starts afresh
    config = MAGRPOConfig(
        env_id=ENV_ID,
        env_kwargs=json.dumps(ENV_KWARGS),
        policies="shared",
        credit="agent",
        group_size=2,
        prompts_per_step=2,
        max_new_tokens=48,
        max_turns=2,
        run=RunConfig(output_dir=str(out), max_steps=args.steps, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-4),
    )
    final = train(config)
    for line in (out / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        print(f"step {row['step']}: pro {row['agent/pro/reward']:+.2f}, con {row['agent/con/reward']:+.2f}")

    model, tokenizer = load_policy(ModelConfig(name_or_path=str(final)))
    initial, initial_tokenizer = load_policy(ModelConfig(name_or_path="tiny"))
    trained = Policy(HFGenerator(model, tokenizer), tokenizer)
    print(
        f"win rate against the initial policy: {win_rate(trained, Policy(HFGenerator(initial, initial_tokenizer), initial_tokenizer)):.0%}"
    )
    print(
        f"win rate against the slogan debater: {win_rate(trained, Policy(SloganGenerator(tokenizer), tokenizer)):.0%}"
    )


if __name__ == "__main__":
    main()
