"""PPO on multi-turn tool use: mrlm/ToolUse-v0 with a calculator, up to three replies per episode.

An episode is a question ("What is 57^8?"); the model may call the calculator with a
``<tool_call>`` block, reads the result in the env's next message, and answers in
``<answer>...</answer>``. The env pays 0.1 for the first successful call of a needed tool, 1 for a
right answer, and -0.05 per malformed call; a reply without a call ends the episode.

The tiny local model starts from random weights and never writes a tool call, so its episodes end
after one reply and earn 0: run as is, the example shows the plumbing of a three-turn PPO run. With
``--warmup-steps``, an SFT warm-up on the scripted agent's transcripts (``ReferenceAgent``: call,
read the result, answer) first teaches the model to open its reply with a ``<tool_call>`` block, so
that PPO trains on episodes of two and three replies. The tiny model's calls stay malformed (each
costs 0.05), so the rewards vary but no call succeeds. The printout shows each step's reward and
``success/turn<k>``: the share of the episodes with a k-th reply whose k-th reply earned a positive
reward (a successful call or a right answer); ``success/turn2`` appears only in steps where some
episode had a second reply.

Run (everything lands in ./runs/ppo_tool_use; times on two CPU cores)::

    uv run python examples/ppo_tool_use.py                    # PPO only: about 12 seconds
    uv run python examples/ppo_tool_use.py --warmup-steps 60  # about a minute: some episodes call
    uv run python examples/ppo_tool_use.py --warmup-steps 150 # 2.5 minutes: nearly every one does

PPO alone from the command line::

    uv run mrlm-train ppo --env-id mrlm/ToolUse-v0 --max-turns 3 \\
        --env-kwargs '{"tools": ["calculator"], "kinds": ["arithmetic"], "max_turns": 3}'
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import gymnasium

import mrlm.envs  # noqa: F401  (registers the mrlm/ ids with Gymnasium)
from mrlm.envs.tools import ToolUseEnv
from mrlm.envs.tools.reference import ReferenceAgent
from mrlm.train.algorithms import ppo, sft
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.errors import OutputDirError
from mrlm.train.loop.output_dir import fresh_dir
from mrlm.train.policy import ModelConfig

ENV_ID = "mrlm/ToolUse-v0"
TURNS = 3
ENV_KWARGS: dict[str, Any] = {"tools": ["calculator"], "kinds": ["arithmetic"], "max_turns": TURNS}
DEMO_SEED_BASE = 500_000_000
"""Seeds of the demonstrations; PPO draws its tasks from seeds 0 on (run.seed 0), so they differ."""


def write_demonstrations(count: int, path: Path) -> Path:
    """One chat per task: the env's system prompt, the question, and the scripted agent's
    replies with the env's tool results between them."""
    env = gymnasium.make(ENV_ID, **ENV_KWARGS).unwrapped
    assert isinstance(env, ToolUseEnv)
    with path.open("w", encoding="utf-8") as handle:
        for seed in range(DEMO_SEED_BASE, DEMO_SEED_BASE + count):
            observation, info = env.reset(seed=seed)
            assert env.task is not None
            agent = ReferenceAgent(env.task, env.registry.names)
            messages = [
                {"role": "system", "content": info["system_prompt"]},
                {"role": "user", "content": observation},
            ]
            terminated = False
            while not terminated:
                reply = agent.act(observation)
                messages.append({"role": "assistant", "content": reply})
                observation, _, terminated, _, _ = env.step(reply)
                if not terminated:
                    messages.append({"role": "user", "content": observation})
            handle.write(json.dumps({"messages": messages}) + "\n")
    env.close()
    return path


def warm_up(out: Path, demos: int, steps: int) -> Path:
    """SFT of the tiny model on the scripted agent's transcripts; returns the warm model."""
    data = write_demonstrations(demos, out / "demonstrations.jsonl")
    return sft.train(
        sft.SFTConfig(
            data=str(data),
            max_length=1536,  # the system prompt lists the tool's schema: ~1100 tokens per chat
            batch_size=16,
            micro_batch_size=16,
            model=ModelConfig(name_or_path="tiny"),
            run=RunConfig(output_dir=str(out / "warm"), max_steps=steps, progress_bar=False),
            optim=OptimConfig(learning_rate=3e-3, warmup_steps=min(10, steps - 1)),
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=3, help="PPO steps")
    parser.add_argument("--prompts-per-step", type=int, default=4, help="PPO episodes per step")
    parser.add_argument("--warmup-steps", type=int, default=0, help="SFT steps before PPO (0: none)")
    parser.add_argument("--demos", type=int, default=64, help="transcripts for the warm-up")
    parser.add_argument("--output-dir", default="runs/ppo_tool_use")
    args = parser.parse_args()

    for name in ("steps", "prompts_per_step"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    # A rerun starts afresh; a directory holding anything this script did not write is refused.
    try:
        out = fresh_dir(args.output_dir, "ppo_tool_use.py")
    except OutputDirError as error:
        parser.error(str(error))

    model = "tiny"
    if args.warmup_steps > 0:
        model = str(warm_up(out, args.demos, args.warmup_steps))
        print(f"SFT warm-up on {args.demos} transcripts of the scripted agent: {model}")

    config = ppo.PPOConfig(
        env_id=ENV_ID,
        env_kwargs=json.dumps(ENV_KWARGS),
        max_turns=TURNS,  # the rollout's cap, as the env's own max_turns
        model=ModelConfig(name_or_path=model),
        prompts_per_step=args.prompts_per_step,
        max_new_tokens=48,
        mini_batch_size=args.prompts_per_step,
        micro_batch_size=args.prompts_per_step,
        ppo_epochs=2,
        lam=1.0,  # the critic starts knowing nothing: Monte Carlo returns keep its errors out
        run=RunConfig(output_dir=str(out / "ppo"), max_steps=args.steps, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-4),
    )
    final = ppo.train(config)

    for line in (out / "ppo" / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        # success/turn<k> is logged for the turns that some episode of the step reached.
        turns = [
            f"turn {k} {row[f'success/turn{k}']:.0%}"
            for k in range(1, TURNS + 1)
            if f"success/turn{k}" in row
        ]
        print(
            f"step {row['step']}: reward {row['reward']:+.3f}, value loss {row['value/loss']:.4f}, "
            f"success {', '.join(turns) or 'n/a (one reply per episode)'}"
        )
    print(f"final model (policy and value head): {final}")


if __name__ == "__main__":
    main()
