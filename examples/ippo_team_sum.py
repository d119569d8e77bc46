"""IPPO on the multi-agent quickstart's task: two agents, each with its own policy and its own critic.

mrlm/TeamSum-v0 as ``mrlm-train quickstart --multi-agent`` plays it: each agent sees only its own
``x + y`` and the team is right only when the values they give add up. A tiny model is built from
scratch and warmed up by SFT on the env's demonstrations (both agents'), as the quickstart does;
then each agent starts its own copy with a separate critic (``critic="model"``, started from the
agent's policy) and trains it with PPO on the team's reward, the partner being part of its
environment. Every combination of the agents' samples is played (``joint="cross"``) and each sample
is credited with its mean team reward over the partner's samples. The tasks, samples, temperature,
learning rate and steps are the quickstart's MAGRPO stage, so the two can be compared; the update
is PPO's (two epochs of two mini-batches). The example prints the team's greedy success on
held-out tasks before and after IPPO: 59.0% -> 84.0% measured here (one thread, 12.5 minutes).

Run (about ten minutes on two busy CPU cores; the runs land in ./runs/ippo_team_sum)::

    uv run python examples/ippo_team_sum.py
"""

from __future__ import annotations

import argparse
import json

from mrlm.train.algorithms.ippo import IPPOConfig, train
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.errors import OutputDirError
from mrlm.train.loop.output_dir import fresh_dir
from mrlm.train.policy import ModelConfig
from mrlm.train.quickstart import DEMO_SEED_BASE, EVAL_SEED_BASE, QuickstartConfig
from mrlm.train.quickstart_team import (
    AGENTS,
    TEAM_ENV_ID,
    TEAM_ENV_KWARGS,
    evaluate_team,
    team_sft_warmup,
    write_team_demonstrations,
)
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny


def main() -> None:
    quickstart = QuickstartConfig()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=quickstart.magrpo_steps, help="IPPO steps")
    parser.add_argument("--sft-steps", type=int, default=quickstart.team_sft_steps, help="SFT warm-up steps")
    parser.add_argument(
        "--tasks-per-step", type=int, default=quickstart.prompts_per_step, help="tasks per step"
    )
    parser.add_argument(
        "--group-size",
        type=int,
        default=quickstart.group_size,
        help="samples per agent and task, all crossed",
    )
    parser.add_argument("--eval-tasks", type=int, default=200, help="held-out joint tasks per evaluation")
    parser.add_argument("--output-dir", default="runs/ippo_team_sum")
    args = parser.parse_args()

    # A rerun starts afresh; a directory holding anything this script did not write is refused.
    try:
        out = fresh_dir(args.output_dir, "ippo_team_sum.py")
    except OutputDirError as error:
        parser.error(str(error))
    settings = QuickstartConfig(output_dir=str(out), progress_bar=False)
    tokenizer = build_tiny_tokenizer()
    initial = save_tiny(out / "initial", build_tiny_model(tokenizer, seed=settings.seed), tokenizer)
    demos = write_team_demonstrations(
        range(DEMO_SEED_BASE, DEMO_SEED_BASE + settings.team_demonstrations), out / "demonstrations.jsonl"
    )
    sft_model = team_sft_warmup(demos, initial, out / "sft", args.sft_steps, settings)
    eval_seeds = range(EVAL_SEED_BASE, EVAL_SEED_BASE + args.eval_tasks)
    before = evaluate_team(dict.fromkeys(AGENTS, sft_model), eval_seeds, settings.max_new_tokens)

    rows = args.tasks_per_step * args.group_size
    config = IPPOConfig(
        env_id=TEAM_ENV_ID,
        env_kwargs=json.dumps(TEAM_ENV_KWARGS),
        kind="parallel",
        model=ModelConfig(name_or_path=str(sft_model)),
        critic="model",
        critic_learning_rate=settings.critic_learning_rate,
        joint="cross",
        credit="agent",  # TeamSum pays each agent the team's reward
        group_size=args.group_size,
        prompts_per_step=args.tasks_per_step,
        max_new_tokens=settings.max_new_tokens,
        # Below 1, the samples stay close to the greedy replies the team is evaluated on.
        temperature=settings.magrpo_temperature,
        # Each critic starts knowing nothing of the task: Monte Carlo returns (lambda 1) keep its
        # early errors out of the advantages.
        lam=1.0,
        # PPO's schedule: two epochs of two shuffled mini-batches, four optimizer steps per batch.
        num_iterations=2,
        mini_batch_size=max(1, rows // 2),
        micro_batch_size=rows,
        run=RunConfig(
            output_dir=str(out / "ippo"),
            seed=settings.seed,
            max_steps=args.steps,
            log_every=max(1, args.steps // 10),
            progress_bar=False,
        ),
        optim=OptimConfig(learning_rate=settings.magrpo_learning_rate),
    )
    final = train(config)
    after = evaluate_team({agent: final / agent for agent in AGENTS}, eval_seeds, settings.max_new_tokens)

    print(f"\nteam success, greedy, {args.eval_tasks} held-out joint tasks")
    print(f"  after SFT:         {before:.1%}")
    print(f"  after SFT + IPPO:  {after:.1%}")
    print(f"metrics: {out / 'ippo' / 'metrics.jsonl'}")


if __name__ == "__main__":
    main()
