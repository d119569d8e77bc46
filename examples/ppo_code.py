"""PPO on multi-turn code debugging: mrlm/Code-v0 with two replies per episode.

The env runs each reply's code against hidden tests in the sandbox. When the first reply fails, the
env answers with the test feedback and the model replies again; the second reply may fix the code.
Each turn's reward sits on the last token of that turn's reply, and GAE carries the second turn's
reward back to the first turn's tokens, so a first reply that sets up a good fix is credited too.

The tiny local model writes no working code: every reward is 0. The example shows the plumbing
(two-turn rollouts, per-turn metrics, the critic, the saved model), not learning. It prints each
step's reward and ``success/turn1`` / ``success/turn2`` (the share of the episodes whose first or
second reply passed the tests), then one episode's two replies and the feedback between them.

Run (about 12 seconds on two CPU cores; the run lands in ./runs/ppo_code)::

    uv run python examples/ppo_code.py --steps 3

The same from the command line::

    uv run mrlm-train ppo --env-id mrlm/Code-v0 --env-kwargs '{"max_turns": 2}' --max-turns 2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mrlm.train.algorithms.ppo import PPOConfig, train
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.errors import OutputDirError
from mrlm.train.loop.output_dir import fresh_dir
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.rollout import RolloutEngine

ENV_ID = "mrlm/Code-v0"
TURNS = 2


def show_episode(model_dir: Path, seed: int) -> None:
    """Play one episode with the trained policy and print its replies and the env's feedback."""
    model, tokenizer = load_policy(ModelConfig(name_or_path=str(model_dir)))
    sampling = SamplingParams(max_new_tokens=48, temperature=1.0, seed=seed)
    engine = RolloutEngine(
        ENV_ID,
        HFGenerator(model, tokenizer),
        tokenizer,
        sampling,
        env_kwargs={"max_turns": TURNS},
        max_turns=TURNS,
    )
    with engine:
        [episode] = engine.collect([seed])
    # messages: the system prompt, then the task, the reply, the feedback, the second reply
    for message in episode.messages:
        if message["role"] == "system":
            continue
        text = message["content"] if len(message["content"]) < 400 else message["content"][:400] + " [...]"
        print(f"--- {message['role']}:\n{text}")
    print(f"--- turn rewards: {episode.turn_rewards}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--output-dir", default="runs/ppo_code")
    args = parser.parse_args()

    for name in ("steps", "prompts_per_step"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    # A rerun starts afresh; a directory holding anything this script did not write is refused.
    try:
        out = fresh_dir(args.output_dir, "ppo_code.py")
    except OutputDirError as error:
        parser.error(str(error))

    config = PPOConfig(
        env_id=ENV_ID,
        # The env allows a second reply after failing tests; the rollout must allow it too.
        env_kwargs=json.dumps({"max_turns": TURNS}),
        max_turns=TURNS,
        prompts_per_step=args.prompts_per_step,
        max_new_tokens=48,
        mini_batch_size=args.prompts_per_step,
        micro_batch_size=args.prompts_per_step,
        ppo_epochs=2,
        run=RunConfig(output_dir=str(out), max_steps=args.steps, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-4),
    )
    final = train(config)

    for line in (out / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        # success/turn<k> is only logged when some episode of the step had a k-th reply.
        turns = ", ".join(
            f"turn {k} {row[f'success/turn{k}']:.0%}"
            for k in range(1, TURNS + 1)
            if f"success/turn{k}" in row
        )
        print(
            f"step {row['step']}: reward {row['reward']:.3f}, value loss {row['value/loss']:.4f}, "
            f"success {turns or 'n/a'}"
        )
    print(f"final model (policy and value head): {final}\n")
    show_episode(final, seed=0)


if __name__ == "__main__":
    main()
