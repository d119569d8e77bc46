"""The quickstart: a tiny model learns easy arithmetic by SFT, then by RL, on a CPU in minutes.

Everything is local (no model hub, no network). The phases:

1. **task**: every ``a + b`` and ``a - b`` with single digits ``a, b`` in 1-9 (162 problems), as
   records of ``mrlm/Math-v0``, whose system prompt asks for the answer as ``\\boxed{n}`` and which
   checks each reply itself; a tiny causal LM and tokenizer are built from scratch;
2. **evaluation** of the untrained model: greedy replies to every problem once;
3. **SFT warm-up** on demonstrations the environment provides (the question, and a reply that
   restates the sum and ends with ``\\boxed{answer}`` from ``env.unwrapped.task.answer``) for a
   few of the problems, deliberately short of convergence: it teaches the reply format and some
   of the facts;
4. evaluation;
5. **RL** on all the problems, from the environment's reward alone: GRPO (the default), or PPO
   with a critic (``algorithm="ppo"``; a separate value model started from the SFT model's weights);
6. evaluation, a table of success rates per stage, and the reward curve as a PNG.

Evaluation seeds are never used for training, but with 162 problems every range of 162 seeds
serves each problem once: the success rate is over the whole task, not over unseen problems.
The default budget runs in about two minutes on two CPU cores (GRPO or PPO).
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mrlm.train.algorithms import grpo, ppo, sft
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.plots import plot_metrics
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.rollout import RolloutEngine
from mrlm.train.task_seeds import DEMO_SEED_BASE, EVAL_SEED_BASE

ENV_ID = "mrlm/Math-v0"
OUTPUTS = (
    "problems.jsonl",
    "demonstrations.jsonl",
    "initial",
    "sft",
    "grpo",
    "grpo_reward.png",
    "ppo",
    "ppo_reward.png",
    "results.json",
)
"""What the quickstart writes in its output directory."""


@dataclass
class QuickstartConfig:
    """Train a tiny model on easy arithmetic with SFT, then GRPO or PPO, and show what each stage adds."""

    output_dir: str = "runs/quickstart"
    """Directory for the problems, demonstrations, models, metrics, plot and results (a rerun replaces them)."""
    seed: int = 0
    """Seed of the problem order, the model's initialisation and both training runs."""
    hidden_size: int = 64
    """Width of the tiny model."""
    num_layers: int = 2
    """Transformer layers of the tiny model."""
    demonstrations: int = 60
    """Problems with a demonstration for the SFT warm-up (of 162)."""
    sft_steps: int = 300
    """SFT optimizer steps."""
    sft_batch_size: int = 32
    """Demonstrations per SFT step."""
    sft_learning_rate: float = 3e-3
    """SFT learning rate (after 10 warm-up steps)."""
    algorithm: Literal["grpo", "ppo"] = "grpo"
    """The RL stage after the SFT warm-up of the single-agent quickstart (the multi-agent one runs
    MAGRPO, and refuses "ppo")."""
    grpo_steps: int = 120
    """GRPO steps."""
    prompts_per_step: int = 16
    """Problems per GRPO step."""
    group_size: int = 8
    """Sampled replies per problem in GRPO (PPO samples one reply to each of prompts_per_step *
    group_size problems per step: as many replies, more problems for its critic to learn from); with
    multi_agent, samples per agent and task in MAGRPO (2 to 16: every combination is played)."""
    grpo_learning_rate: float = 5e-4
    """GRPO learning rate."""
    ppo_steps: int = 100
    """PPO steps."""
    ppo_learning_rate: float = 5e-4
    """PPO learning rate of the policy."""
    critic_learning_rate: float = 1e-3
    """PPO learning rate of the critic."""
    temperature: float = 1.0
    """Sampling temperature of the GRPO and PPO rollouts (evaluations are greedy)."""
    dynamic_sampling: bool = True
    """Skip problems whose replies all score the same and sample others instead (DAPO)."""
    max_new_tokens: int = 24
    """Longest reply, in tokens."""
    progress_bar: bool = True
    """Show a progress line while training."""
    multi_agent: bool = False
    """Run the multi-agent quickstart instead: two agents on mrlm/TeamSum-v0, SFT then MAGRPO with one
    model per agent (see mrlm.train.quickstart_team)."""
    team_demonstrations: int = 40
    """Multi-agent: tasks with a demonstration for each agent in the SFT warm-up."""
    team_sft_steps: int = 120
    """Multi-agent: SFT optimizer steps."""
    magrpo_steps: int = 160
    """Multi-agent: MAGRPO steps."""
    magrpo_learning_rate: float = 5e-4
    """Multi-agent: MAGRPO learning rate of each agent's model."""
    magrpo_temperature: float = 0.5
    """Multi-agent: sampling temperature of the MAGRPO rollouts (evaluations are greedy). Below 1, the
    samples stay close to the greedy replies that the team is evaluated on."""

    def __post_init__(self) -> None:
        from mrlm.train.generation.base import check_sampling
        from mrlm.train.setting_checks import check_counts
        from mrlm.train.tiny import check_tiny_shape

        check_tiny_shape(hidden_size=self.hidden_size, num_layers=self.num_layers)
        if not 1 <= self.demonstrations <= len(easy_problems(0)):
            raise ValueError(
                f"demonstrations must be in [1, {len(easy_problems(0))}], got {self.demonstrations}"
            )
        counts = ("sft_steps", "sft_batch_size", "grpo_steps", "ppo_steps", "prompts_per_step")
        team_counts = ("team_demonstrations", "team_sft_steps", "magrpo_steps")
        check_counts(**{name: getattr(self, name) for name in (*counts, *team_counts)})
        if self.multi_agent:
            from mrlm.train.quickstart_team import check_team_settings

            check_team_settings(self)
        # GRPO's advantages compare the replies of one problem; PPO only multiplies by it.
        least_group = 2 if self.algorithm == "grpo" else 1
        if self.group_size < least_group:
            raise ValueError(
                f"group_size must be at least {least_group} with {self.algorithm}, got {self.group_size}"
            )
        rates = ("sft_learning_rate", "grpo_learning_rate", "ppo_learning_rate", "critic_learning_rate")
        for name in (*rates, "magrpo_learning_rate"):
            rate = getattr(self, name)
            if not (math.isfinite(rate) and rate > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {rate}")
        check_sampling(self.max_new_tokens, self.temperature, 1.0)
        if self.magrpo_temperature <= 0:
            raise ValueError(
                f"magrpo_temperature must be > 0 (MAGRPO samples), got {self.magrpo_temperature}"
            )


@dataclass
class QuickstartResult:
    """Where everything is and what each stage achieved."""

    output_dir: Path
    success: dict[str, float]
    """Greedy success rate over all problems after each stage: untrained, SFT, then GRPO or PPO."""
    seconds: dict[str, float]
    """Wall time of each stage."""
    sft_model: Path
    rl_model: Path
    """The policy after the RL stage."""
    plot: Path


def easy_problems(seed: int) -> list[dict[str, str]]:
    """Every ``a + b`` and ``a - b`` with ``a, b`` in 1-9, as GSM8K-style records in a seeded order."""
    problems = [
        {"question": f"What is {a} {op} {b}?", "answer": f"#### {a + b if op == '+' else a - b}"}
        for a in range(1, 10)
        for b in range(1, 10)
        for op in "+-"
    ]
    random.Random(seed).shuffle(problems)
    return problems


def demonstration(question: str, answer: str) -> str:
    """The reply SFT imitates: the sum restated with its value, then the boxed answer.

    Restating puts the operands right before the value the model writes, which a tiny model finds
    much easier than recalling them from the question.
    """
    expression = question.removeprefix("What is ").removesuffix("?")
    return f"{expression} = {answer}. \\boxed{{{answer}}}"


def write_demonstrations(env_kwargs: dict[str, Any], seeds: range, path: Path) -> Path:
    """One chat per seed: the env's system prompt and question, and :func:`demonstration`'s reply."""
    import mrlm.envs

    env = mrlm.envs.make(ENV_ID, **env_kwargs)
    with path.open("w", encoding="utf-8") as handle:
        for seed in seeds:
            question, info = env.reset(seed=seed)
            reply = demonstration(question, str(env.unwrapped.task.answer))
            messages = [
                {"role": "system", "content": info["system_prompt"]},
                {"role": "user", "content": question},
                {"role": "assistant", "content": reply},
            ]
            handle.write(json.dumps({"messages": messages}) + "\n")
    env.close()
    return path


def evaluate(model_dir: Path, env_kwargs: dict[str, Any], seeds: range, max_new_tokens: int) -> float:
    """Share of the episodes of ``seeds`` that the model's greedy reply solves."""
    model, tokenizer = load_policy(ModelConfig(name_or_path=str(model_dir)))
    sampling = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0)
    engine = RolloutEngine(ENV_ID, HFGenerator(model, tokenizer), tokenizer, sampling, env_kwargs=env_kwargs)
    with engine:
        trajectories = engine.collect(list(seeds))
    return sum(t.total_reward > 0 for t in trajectories) / len(trajectories)


def run_quickstart(config: QuickstartConfig) -> QuickstartResult:
    """Run every phase, printing progress and the final table; return the results."""
    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny

    started = time.perf_counter()
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    # A rerun starts afresh (training runs refuse to mix with old checkpoints); only what the
    # quickstart writes is removed, never anything else in the directory.
    clear_outputs(out, OUTPUTS)
    seconds: dict[str, float] = {}
    success: dict[str, float] = {}

    # 1. task and model
    clock = time.perf_counter()
    problems = easy_problems(config.seed)
    problems_file = out / "problems.jsonl"
    problems_file.write_text("".join(json.dumps(p) + "\n" for p in problems), encoding="utf-8")
    env_kwargs = {"records": str(problems_file)}
    eval_seeds = range(EVAL_SEED_BASE, EVAL_SEED_BASE + len(problems))
    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(
        tokenizer, hidden_size=config.hidden_size, num_layers=config.num_layers, seed=config.seed
    )
    initial = save_tiny(out / "initial", model, tokenizer)
    demos = write_demonstrations(
        env_kwargs,
        range(DEMO_SEED_BASE, DEMO_SEED_BASE + config.demonstrations),
        out / "demonstrations.jsonl",
    )
    seconds["setup"] = time.perf_counter() - clock
    say(
        f"task: {len(problems)} problems (a + b, a - b with digits 1-9) in {ENV_ID}; "
        f"model: {sum(p.numel() for p in model.parameters()):,} parameters"
    )

    # 2. the untrained model
    success["untrained"], seconds["eval untrained"] = timed(
        evaluate, initial, env_kwargs, eval_seeds, config.max_new_tokens
    )
    say(f"untrained: {success['untrained']:.1%} of the problems solved")

    # 3-4. SFT warm-up
    say(f"SFT on {config.demonstrations} demonstrations, {config.sft_steps} steps")
    sft_model, seconds["SFT"] = timed(sft_warmup, demos, initial, out / "sft", config.sft_steps, config)
    success["SFT"], seconds["eval SFT"] = timed(
        evaluate, sft_model, env_kwargs, eval_seeds, config.max_new_tokens
    )
    say(f"after SFT: {success['SFT']:.1%} of the problems solved")

    # 5-6. GRPO or PPO from the environment's reward
    stage = config.algorithm.upper()
    train_rl = _grpo_stage if config.algorithm == "grpo" else _ppo_stage
    rl_model, seconds[stage] = timed(train_rl, config, out, env_kwargs, sft_model)
    success[stage], seconds[f"eval {stage}"] = timed(
        evaluate, rl_model, env_kwargs, eval_seeds, config.max_new_tokens
    )
    # The reward of every sampled reply: what dynamic sampling trains on is biased towards mixed groups.
    plot = plot_metrics(
        out / config.algorithm / "metrics.jsonl",
        out / f"{config.algorithm}_reward.png",
        keys=("sampled_reward",) if config.algorithm == "grpo" else ("reward",),
        smooth=max(1, (config.grpo_steps if config.algorithm == "grpo" else config.ppo_steps) // 12),
    )
    seconds["total"] = time.perf_counter() - started

    result = QuickstartResult(out, success, seconds, sft_model, rl_model, plot)
    (out / "results.json").write_text(
        json.dumps({"success": success, "seconds": seconds}, indent=2) + "\n", encoding="utf-8"
    )
    say(format_report(result, len(problems)))
    return result


def _grpo_stage(config: QuickstartConfig, out: Path, env_kwargs: dict[str, Any], sft_model: Path) -> Path:
    say(
        f"GRPO: {config.grpo_steps} steps of {config.prompts_per_step} problems x {config.group_size} replies"
    )
    grpo_config = grpo.GRPOConfig(
        env_id=ENV_ID,
        env_kwargs=json.dumps(env_kwargs),
        model=ModelConfig(name_or_path=str(sft_model)),
        group_size=config.group_size,
        prompts_per_step=config.prompts_per_step,
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        micro_batch_size=config.group_size * config.prompts_per_step,
        aggregation="token_mean",
        dynamic_sampling=config.dynamic_sampling,
        run=run_config(out / "grpo", config.grpo_steps, config),
        optim=OptimConfig(learning_rate=config.grpo_learning_rate),
    )
    return grpo.train(grpo_config)


def _ppo_stage(config: QuickstartConfig, out: Path, env_kwargs: dict[str, Any], sft_model: Path) -> Path:
    problems = config.prompts_per_step * config.group_size
    say(f"PPO: {config.ppo_steps} steps of {problems} problems x 1 reply, with a critic")
    ppo_config = ppo.PPOConfig(
        env_id=ENV_ID,
        env_kwargs=json.dumps(env_kwargs),
        model=ModelConfig(name_or_path=str(sft_model)),
        critic="model",
        critic_learning_rate=config.critic_learning_rate,
        prompts_per_step=problems,
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        # The critic starts knowing nothing of the task: Monte Carlo returns (lambda 1) keep its
        # early errors out of the advantages, where GAE's bootstrapping would carry them.
        lam=1.0,
        ppo_epochs=2,
        mini_batch_size=max(1, problems // 2),
        micro_batch_size=problems,
        run=run_config(out / "ppo", config.ppo_steps, config),
        optim=OptimConfig(learning_rate=config.ppo_learning_rate),
    )
    return ppo.train(ppo_config) / ppo.POLICY


def format_report(result: QuickstartResult, num_problems: int) -> str:
    """The table of success rates per stage and where every output is."""
    labels = {
        "untrained": "untrained",
        "SFT": "after SFT",
        "GRPO": "after SFT + GRPO",
        "PPO": "after SFT + PPO",
    }
    stage = "GRPO" if "GRPO" in result.success else "PPO"
    rows = [f"{'stage':<18} {'solved':>7}   (greedy, each of the {num_problems} problems once)"]
    rows += [f"{labels[stage]:<18} {rate:>7.1%}" for stage, rate in result.success.items()]
    out = result.output_dir
    return "\n".join(
        [
            "",
            *rows,
            "",
            f"time: {result.seconds['total']:.0f}s "
            f"(SFT {result.seconds['SFT']:.0f}s, {stage} {result.seconds[stage]:.0f}s)",
            f"run directory:   {out}",
            f"  SFT model:     {result.sft_model}   (metrics: {out / 'sft' / 'metrics.jsonl'})",
            f"  {stage} model:{' ' * (8 - len(stage))}{result.rl_model}   (metrics: {out / stage.lower() / 'metrics.jsonl'})",
            f"  reward curve:  {result.plot}",
            f"  results:       {out / 'results.json'}",
        ]
    )


def clear_outputs(out: Path, names: tuple[str, ...]) -> None:
    """Remove what an earlier run of a quickstart wrote in ``out`` (``names``), and nothing else: a
    rerun starts afresh (training runs refuse to mix with old checkpoints)."""
    from mrlm.train.loop.fsio import remove_tree

    for name in names:
        if (out / name).is_dir():
            remove_tree(out / name)
        else:
            (out / name).unlink(missing_ok=True)


def sft_warmup(demos: Path, initial: Path, output_dir: Path, steps: int, config: QuickstartConfig) -> Path:
    """The SFT warm-up on the demonstrations ``demos`` from the model in ``initial``; returns the
    SFT model's directory."""
    sft_config = sft.SFTConfig(
        data=str(demos),
        max_length=256,
        batch_size=config.sft_batch_size,
        micro_batch_size=config.sft_batch_size,
        model=ModelConfig(name_or_path=str(initial)),
        run=run_config(output_dir, steps, config),
        optim=OptimConfig(learning_rate=config.sft_learning_rate, warmup_steps=min(10, steps - 1)),
    )
    return sft.train(sft_config)


def run_config(output_dir: Path, steps: int, config: QuickstartConfig) -> RunConfig:
    return RunConfig(
        output_dir=str(output_dir),
        seed=config.seed,
        max_steps=steps,
        log_every=max(1, steps // 20),
        progress_bar=config.progress_bar,
    )


def timed(fn: Any, *args: Any) -> tuple[Any, float]:
    clock = time.perf_counter()
    value = fn(*args)
    return value, time.perf_counter() - clock


def say(text: str) -> None:
    print(text, flush=True)
