"""MAGRPO on the built-in team envs: CoopCode-v0, Writing-v0 and ClassCompletion-v0.

Each env is played by two agents, each with its own tiny model (``policies="per_agent"``), trained
together on the team's reward. CoopCode-v0: a helper function and the main function that calls it,
assembled and run against hidden tests. Writing-v0: a summary and an expansion of one text, scored
together. ClassCompletion-v0: the methods of a class skeleton shared out, the class tested.

The tiny local models write no working code and little sense: rewards stay near 0 on the code envs.
The example shows the plumbing on each env (joint rollouts, per-agent rows and metrics, one model
per agent updated in one step, every agent's model saved), not learning; see
``mrlm-train quickstart --multi-agent`` for learning.

Run (about 20 seconds for all three on two CPU cores; runs land in ./runs/magrpo_<env>)::

    uv run python examples/magrpo_team_envs.py --steps 2

The same from the command line, for one env::

    uv run mrlm-train magrpo --env-id mrlm/CoopCode-v0 --policies per_agent
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mrlm.train.algorithms.magrpo import MAGRPOConfig, train
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.fsio import remove_tree

ENVS = {
    "coop_code": ("mrlm/CoopCode-v0", {}),
    "writing": ("mrlm/Writing-v0", {}),
    # One turn each: the agents write their methods once, then the class is tested.
    "class_completion": ("mrlm/ClassCompletion-v0", {"max_turns": 1}),
}


def run(name: str, steps: int, prompts_per_step: int) -> None:
    env_id, kwargs = ENVS[name]
    out = Path(f"runs/magrpo_{name}")
    remove_tree(out)  # a rerun starts afresh
    config = MAGRPOConfig(
        env_id=env_id,
        env_kwargs=json.dumps(kwargs),
        policies="per_agent",
        group_size=2,
        prompts_per_step=prompts_per_step,
        max_new_tokens=32,
        run=RunConfig(output_dir=str(out), max_steps=steps, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-4),
    )
    final = train(config)
    for line in (out / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        agents = ", ".join(
            f"{key.split('/')[1]} {value:.3f}"
            for key, value in row.items()
            if key.startswith("agent/") and key.endswith("/reward")
        )
        print(
            f"{env_id} step {row['step']}: team reward {row['reward']:.3f} ({agents}), {row['step_s']:.1f}s"
        )
    print(f"{env_id}: one model per agent in {sorted(p.name for p in final.iterdir())} under {final}\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", choices=[*ENVS, "all"], default="all")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--prompts-per-step", type=int, default=2)
    args = parser.parse_args()
    for name in ENVS if args.env == "all" else [args.env]:
        run(name, args.steps, args.prompts_per_step)


if __name__ == "__main__":
    main()
