"""MAGRPO with one frozen base model and one LoRA adapter per agent (``policies="lora"``).

Four agents play ``mrlm/TeamSum-v0`` (each sees its own part of a sum, the team is paid when the
values they give add up). Each agent is a policy of its own, with its own optimizer, checkpoint
entry and final directory, as with ``policies="per_agent"``, but the agents share one frozen base
model: memory stays close to one model's however many agents there are (see
``benchmarks/magrpo_lora_memory.py``). The KL reference is the base with the adapters off.

At the end every agent's adapter (``final/<agent>``) is loaded back with peft onto one copy of the
base, the way to serve them all together.

The untrained tiny model never writes a boxed answer, so the team earns nothing and the adapters
stay where they started (zero advantages): the default run shows the plumbing. Give ``--model`` a
model that knows the format, such as the multi-agent quickstart's SFT model (``--model
runs/quickstart/sft/final --agents 2`` after ``mrlm-train quickstart --multi-agent``): some
episodes are then paid, and the adapters move away from the base (the KL to it grows).

Run (a few seconds per step on two CPU cores; the run lands in ./runs/magrpo_lora_agents)::

    uv run python examples/magrpo_lora_agents.py --steps 4

The same from the command line::

    uv run mrlm-train magrpo --env-id mrlm/TeamSum-v0 --env-kwargs '{"num_agents": 4}' \\
        --policies lora --model.lora-r 8
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from peft import PeftModel
from safetensors.torch import load_file

from mrlm.train.algorithms.magrpo import MAGRPOConfig, train
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.fsio import remove_tree
from mrlm.train.policy import ModelConfig, load_policy

OUT = Path("runs/magrpo_lora_agents")


def adapter_size(directory: Path) -> int:
    """Number of weights in a saved peft adapter."""
    return sum(weight.numel() for weight in load_file(directory / "adapter_model.safetensors").values())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--agents", type=int, default=4, help="agents of the team, 2-4")
    parser.add_argument("--model", default="tiny", help="the base model: 'tiny' or a model directory")
    parser.add_argument("--lora-r", type=int, default=8)
    args = parser.parse_args()

    remove_tree(OUT)  # a rerun starts afresh
    model = ModelConfig(name_or_path=args.model, lora_r=args.lora_r)
    config = MAGRPOConfig(
        env_id="mrlm/TeamSum-v0",
        env_kwargs=json.dumps({"num_agents": args.agents, "low": 1, "high": 5}),
        policies="lora",
        model=model,
        group_size=4,
        prompts_per_step=2,
        max_new_tokens=24,  # a boxed answer after the restated sum, in the tiny tokenizer
        kl_coef=0.02,
        run=RunConfig(output_dir=str(OUT), max_steps=args.steps, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-3),
    )
    final = train(config)

    for line in (OUT / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        rewards = ", ".join(
            f"{key.split('/')[1]} {value:.2f}"
            for key, value in row.items()
            if key.startswith("agent/") and key.endswith("/reward")
        )
        print(f"step {row['step']}: team reward {row['reward']:.3f} ({rewards}), kl {row['kl']:.2e}")

    # Every agent's adapter on one copy of the base.
    agents = sorted(path.name for path in final.iterdir())
    base, _ = load_policy(ModelConfig(name_or_path=args.model))
    base_size = sum(param.numel() for param in base.parameters())
    team = PeftModel.from_pretrained(base, final / agents[0], adapter_name=agents[0])
    for agent in agents[1:]:
        team.load_adapter(final / agent, adapter_name=agent)
    sizes = {agent: adapter_size(final / agent) for agent in agents}
    print(f"base model: {base_size:,} weights, frozen and shared by {len(agents)} agents")
    print("adapters: " + ", ".join(f"{agent} {size:,}" for agent, size in sizes.items()))
    print(f"loaded together with peft: {sorted(team.peft_config)} from {final}")


if __name__ == "__main__":
    main()
