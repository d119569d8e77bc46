"""Self-play on mrlm/Debate-v0: one policy argues against frozen past versions of itself.

MAGRPO with one shared model (``policies="shared"``) and each side's own reward (``credit="agent"``:
the debate is zero-sum, +1 to the side the judge prefers, -1 to the other). With
``opponent_pool``, the policy's weights are snapshotted every ``snapshot_every`` steps into a pool
(the initial policy always kept); each step a snapshot is drawn to argue one side of each motion
and the policy the other, the motions dealt to PRO and CON in turn, and only the policy's side
trains. Groups are per side, so the advantages are too.

Every ``eval_every`` steps the run logs the policy's win rate, arguing both sides of fixed
evaluation motions greedily, against its initial weights (``win_rate/initial``) and against a
rule-based debater that repeats one slogan (``win_rate/rule``); a draw is not a win. Before
training the example measures the same against the slogan with
:func:`mrlm.train.self_play.win_rate`, for comparison.

With the tiny local model the numbers show the plumbing only: its speeches are empty or off topic
(no word of the motion), as is the slogan, so the rule judge scores every one 0, every debate is a
draw and every win rate 0%. A pretrained chat model (``--model``) argues on topic and gives signal.

Run (about four minutes on two CPU cores; the run lands in ./runs/magrpo_self_play)::

    uv run python examples/magrpo_self_play_debate.py --steps 4
    uv run python examples/magrpo_self_play_debate.py --model Qwen/Qwen2.5-0.5B-Instruct
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mrlm.train.algorithms.magrpo import MAGRPOConfig, train
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.fsio import remove_tree
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.rollout import Policy
from mrlm.train.self_play import DEBATE_SLOGAN, FixedReply, eval_seeds, win_rate

ENV_ID = "mrlm/Debate-v0"
ENV_KWARGS = {"rounds": 2}  # an opening and a closing speech per side
EVAL_TASKS = 4
MAX_NEW_TOKENS = 48


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--model", default="tiny", help="the policy to start from (a path or Hub id)")
    args = parser.parse_args()
    out = Path("runs/magrpo_self_play")
    remove_tree(out)  # a rerun starts afresh

    model, tokenizer = load_policy(ModelConfig(name_or_path=args.model))
    before = win_rate(
        ENV_ID,
        Policy(HFGenerator(model, tokenizer), tokenizer),
        Policy(FixedReply(tokenizer, DEBATE_SLOGAN), tokenizer),
        eval_seeds(EVAL_TASKS),
        sampling=SamplingParams(max_new_tokens=MAX_NEW_TOKENS, temperature=0.0),
        max_turns=2,
        env_kwargs=ENV_KWARGS,
    )
    print(f"before training, win rate against the slogan debater: {before:.0%}")

    config = MAGRPOConfig(
        env_id=ENV_ID,
        env_kwargs=json.dumps(ENV_KWARGS),
        model=ModelConfig(name_or_path=args.model),
        policies="shared",
        credit="agent",
        group_size=2,
        prompts_per_step=2,  # one motion per side each step
        max_new_tokens=MAX_NEW_TOKENS,
        max_turns=2,
        opponent_pool=3,
        snapshot_every=2,
        eval_every=max(args.steps // 2, 1),
        eval_tasks=EVAL_TASKS,
        run=RunConfig(output_dir=str(out), max_steps=args.steps, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-4),
    )
    train(config)
    for line in (out / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        shown = f"step {row['step']}: against step {row['opponent/snapshot_step']:.0f}, "
        shown += f"pro {row['agent/pro/reward']:+.2f}, con {row['agent/con/reward']:+.2f}"
        if "win_rate/initial" in row:
            shown += f"; win rate against the initial policy {row['win_rate/initial']:.0%}, "
            shown += f"against the slogan debater {row['win_rate/rule']:.0%}"
        print(shown)


if __name__ == "__main__":
    main()
