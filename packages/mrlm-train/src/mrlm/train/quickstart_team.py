"""The multi-agent quickstart: two tiny models learn to solve a task together, on a CPU in minutes.

``mrlm-train quickstart --multi-agent``. Everything is local (no model hub, no network). The phases:

1. **task**: ``mrlm/TeamSum-v0`` with two agents, ``first`` and ``second``: each sees only its own
   ``x + y`` (digits 1-5) and the team is right only when the values they give add up to the sum of
   both parts, so neither can earn anything alone; a tiny causal LM and tokenizer are built from
   scratch;
2. **evaluation** of the untrained model as both agents: greedy replies to the same joint tasks;
3. **SFT warm-up** of one model on demonstrations the environment gives each agent
   (``env.unwrapped.demonstration(agent)``: the part restated, then ``\\boxed{value}``), short of
   convergence: it teaches the format and some of the facts;
4. evaluation, with the SFT model as both agents;
5. **MAGRPO** from the team's reward alone, with one model per agent, both started from the SFT
   model and trained together (``policies="per_agent"``) on every combination of their samples
   (``joint="cross"``: each sample is credited with its mean team reward over the partner's),
   sampled at temperature 0.5, so that the samples stay close to the greedy replies the team is
   evaluated on (at 1, more than half of a half-trained agent's samples are wrong on sums its
   greedy replies get right; see docs/multi_agent.md for the measurements);
6. evaluation with each agent's own trained model, a table of team success per stage, and the
   team's reward curve as a PNG.

Evaluation seeds are never used for training.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from mrlm.train.algorithms import magrpo
from mrlm.train.algorithms.multi_agent import MAX_JOINT_ACTIONS
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.loop import OptimConfig
from mrlm.train.loop.plots import plot_metrics
from mrlm.train.policy import ModelConfig, load_policy, mark_unnamed_opening
from mrlm.train.quickstart import (
    DEMO_SEED_BASE,
    EVAL_SEED_BASE,
    QuickstartConfig,
    clear_outputs,
    run_config,
    say,
    sft_warmup,
    timed,
)
from mrlm.train.rollout import Policy, RolloutEngine
from mrlm.train.rollout.cross import too_many_joint_actions
from mrlm.train.rollout.prompts import default_system_prompt

TEAM_ENV_ID = "mrlm/TeamSum-v0"
AGENTS = ("first", "second")
TEAM_OUTPUTS = ("demonstrations.jsonl", "initial", "sft", "magrpo", "magrpo_reward.png", "results.json")
"""What the multi-agent quickstart writes in its output directory."""
TEAM_ENV_KWARGS: dict[str, int] = {"low": 1, "high": 5}
"""The quickstart's task: digits 1-5, 25 problems per agent."""
EVAL_TASKS = 200
"""Joint tasks of each evaluation."""
TEAM_JOINT: Final = "cross"
"""How the MAGRPO stage pairs the agents' samples: every combination is played."""


@dataclass
class TeamQuickstartResult:
    """Where everything is and what each stage achieved."""

    output_dir: Path
    success: dict[str, float]
    """Greedy team success over the evaluation tasks after each stage: untrained, SFT, MAGRPO."""
    seconds: dict[str, float]
    """Wall time of each stage."""
    sft_model: Path
    agent_models: dict[str, Path]
    """Each agent's model after MAGRPO."""
    plot: Path


def check_team_settings(config: QuickstartConfig) -> None:
    """Refuse settings the MAGRPO stage cannot run, before anything is built: ``algorithm="ppo"``
    (the multi-agent quickstart runs MAGRPO), a group size below MAGRPO's least, or one whose rounds
    of every combination of the agents' samples would play too many joint actions.

    Raises:
        ValueError: the first setting that does not fit, named.
    """
    if config.algorithm != "grpo":
        raise ValueError(
            f"algorithm={config.algorithm!r} chooses the single-agent quickstart's RL stage; the "
            "multi-agent quickstart runs MAGRPO: leave algorithm out with multi_agent"
        )
    least = magrpo.MAGRPOConfig.min_group_size
    if config.group_size < least:
        raise ValueError(
            f"group_size must be at least {least} with multi_agent (MAGRPO compares each agent's "
            f"samples), got {config.group_size}"
        )
    problem = too_many_joint_actions(config.group_size, len(AGENTS), MAX_JOINT_ACTIONS)
    if problem is not None:
        raise ValueError(f"with multi_agent, {problem}: lower group_size")


def write_team_demonstrations(seeds: range, path: Path) -> Path:
    """One chat per seed and agent: the agent's system prompt as a rollout opens it for a model
    trained without the agent's name (the env's alone), the agent's question, and the env's
    demonstration reply for it."""
    import mrlm.envs

    env = mrlm.envs.make(TEAM_ENV_ID, kind="parallel", **TEAM_ENV_KWARGS)
    with path.open("w", encoding="utf-8") as handle:
        for seed in seeds:
            observations, infos = env.reset(seed=seed)
            for agent in env.possible_agents:
                messages = [
                    {
                        "role": "system",
                        "content": default_system_prompt(agent, infos[agent], names_agent=False),
                    },
                    {"role": "user", "content": observations[agent]["text"]},
                    {"role": "assistant", "content": env.unwrapped.demonstration(agent)},
                ]
                handle.write(json.dumps({"messages": messages}) + "\n")
    env.close()
    return path


def team_sft_warmup(
    demos: Path, initial: Path, output_dir: Path, steps: int, config: QuickstartConfig
) -> Path:
    """:func:`~mrlm.train.quickstart.sft_warmup` on both agents' demonstrations; the model's
    directory records that its conversations open without the agent's name, as the demonstrations'
    do, so that ``mrlm-train eval`` plays it as :func:`evaluate_team` does."""
    model = sft_warmup(demos, initial, output_dir, steps, config)
    mark_unnamed_opening(model)
    return model


def evaluate_team(agent_models: dict[str, Path], seeds: range, max_new_tokens: int) -> float:
    """Share of the joint tasks of ``seeds`` that the agents' greedy replies solve together, each
    agent's conversation opening without its name, as in the demonstrations and in MAGRPO."""
    policies = {}
    for agent, directory in agent_models.items():
        model, tokenizer = load_policy(ModelConfig(name_or_path=str(directory)))
        policies[agent] = Policy(HFGenerator(model, tokenizer), tokenizer, names_agent=False)
    sampling = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0)
    with RolloutEngine(
        TEAM_ENV_ID, policies, sampling=sampling, kind="parallel", env_kwargs=TEAM_ENV_KWARGS
    ) as engine:
        rows = engine.collect(list(seeds))
    solved: dict[int | None, bool] = {}
    for row in rows:
        solved[row.episode] = solved.get(row.episode, True) and row.total_reward > 0
    return sum(solved.values()) / len(solved)


def run_team_quickstart(config: QuickstartConfig) -> TeamQuickstartResult:
    """Run every phase, printing progress and the final table; return the results."""
    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny

    started = time.perf_counter()
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    clear_outputs(out, TEAM_OUTPUTS)
    seconds: dict[str, float] = {}
    success: dict[str, float] = {}

    # 1. task and model
    clock = time.perf_counter()
    eval_seeds = range(EVAL_SEED_BASE, EVAL_SEED_BASE + EVAL_TASKS)
    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(
        tokenizer, hidden_size=config.hidden_size, num_layers=config.num_layers, seed=config.seed
    )
    initial = save_tiny(out / "initial", model, tokenizer)
    demos = write_team_demonstrations(
        range(DEMO_SEED_BASE, DEMO_SEED_BASE + config.team_demonstrations), out / "demonstrations.jsonl"
    )
    seconds["setup"] = time.perf_counter() - clock
    say(
        f"task: {TEAM_ENV_ID}, two agents, each sees only its own x + y (digits 1-5); the team is right when "
        f"their values add up; model: {sum(p.numel() for p in model.parameters()):,} parameters per agent"
    )

    # 2. the untrained model as both agents
    success["untrained"], seconds["eval untrained"] = timed(
        evaluate_team, dict.fromkeys(AGENTS, initial), eval_seeds, config.max_new_tokens
    )
    say(f"untrained: {success['untrained']:.1%} of the team tasks solved")

    # 3-4. SFT warm-up of one model on both agents' demonstrations
    say(
        f"SFT on {config.team_demonstrations} tasks' demonstrations (both agents), {config.team_sft_steps} steps"
    )
    sft_model, seconds["SFT"] = timed(
        team_sft_warmup, demos, initial, out / "sft", config.team_sft_steps, config
    )
    success["SFT"], seconds["eval SFT"] = timed(
        evaluate_team, dict.fromkeys(AGENTS, sft_model), eval_seeds, config.max_new_tokens
    )
    say(f"after SFT: {success['SFT']:.1%} of the team tasks solved")

    # 5-6. MAGRPO: one model per agent, trained together on the team's reward
    say(
        f"MAGRPO: {config.magrpo_steps} steps of {config.prompts_per_step} tasks x {config.group_size} "
        f"samples per agent (every combination played), one model per agent, temperature {config.magrpo_temperature}"
    )
    final, seconds["MAGRPO"] = timed(_magrpo_stage, config, out, sft_model)
    agent_models = {agent: final / agent for agent in AGENTS}
    success["MAGRPO"], seconds["eval MAGRPO"] = timed(
        evaluate_team, agent_models, eval_seeds, config.max_new_tokens
    )
    plot = plot_metrics(
        out / "magrpo" / "metrics.jsonl",
        out / "magrpo_reward.png",
        keys=("sampled_reward",),
        smooth=max(1, config.magrpo_steps // 12),
    )
    seconds["total"] = time.perf_counter() - started

    result = TeamQuickstartResult(out, success, seconds, sft_model, agent_models, plot)
    (out / "results.json").write_text(
        json.dumps({"success": success, "seconds": seconds}, indent=2) + "\n", encoding="utf-8"
    )
    say(format_team_report(result))
    return result


def _magrpo_stage(config: QuickstartConfig, out: Path, sft_model: Path) -> Path:
    magrpo_config = magrpo.MAGRPOConfig(
        env_id=TEAM_ENV_ID,
        env_kwargs=json.dumps(TEAM_ENV_KWARGS),
        kind="parallel",
        policies="per_agent",
        model=ModelConfig(name_or_path=str(sft_model)),
        # Every combination of the two agents' samples is played, and each sample is credited with
        # its mean reward over them: how often it is right with the partner as the partner is now.
        # TeamSum pays each agent the team's reward, so the agents' own credit is the team's.
        joint=TEAM_JOINT,
        credit="agent",
        group_size=config.group_size,
        prompts_per_step=config.prompts_per_step,
        max_new_tokens=config.max_new_tokens,
        temperature=config.magrpo_temperature,
        micro_batch_size=config.group_size * config.prompts_per_step,
        aggregation="token_mean",
        dynamic_sampling=config.dynamic_sampling,
        run=run_config(out / "magrpo", config.magrpo_steps, config),
        optim=OptimConfig(learning_rate=config.magrpo_learning_rate),
    )
    return magrpo.train(magrpo_config)


def format_team_report(result: TeamQuickstartResult) -> str:
    """The table of team success per stage and where every output is."""
    labels = {"untrained": "untrained", "SFT": "after SFT", "MAGRPO": "after SFT + MAGRPO"}
    rows = [f"{'stage':<20} {'team solved':>11}   (greedy, {EVAL_TASKS} joint tasks)"]
    rows += [f"{labels[stage]:<20} {rate:>11.1%}" for stage, rate in result.success.items()]
    out = result.output_dir
    models = "  ".join(str(path) for path in result.agent_models.values())
    return "\n".join(
        [
            "",
            *rows,
            "",
            f"time: {result.seconds['total']:.0f}s (SFT {result.seconds['SFT']:.0f}s, "
            f"MAGRPO {result.seconds['MAGRPO']:.0f}s)",
            f"run directory:   {out}",
            f"  SFT model:     {result.sft_model}",
            f"  agent models:  {models}   (metrics: {out / 'magrpo' / 'metrics.jsonl'})",
            f"  reward curve:  {result.plot}",
            f"  results:       {out / 'results.json'}",
        ]
    )
