"""pass@k on the quickstart's task, greedy and sampled, with the library behind ``mrlm-train eval``.

1. the quickstart's task (every ``a + b`` and ``a - b`` with digits 1-9: 162 problems as
   ``mrlm/Math-v0`` records) and its model: a tiny model built from scratch and warmed up by SFT on
   60 demonstrations, exactly as ``mrlm-train quickstart`` does (or the model given with ``--model``,
   such as a quickstart run's ``runs/quickstart/grpo/final``);
2. every problem once, greedily, on the quickstart's evaluation seeds (``10**9`` on): the
   quickstart's "after SFT" success rate (40.1% here);
3. every problem ``k`` times at temperature 1: pass@1, pass@2, pass@4, ..., pass@k, the share of
   problems that one of k tries solves (40.0%, 43.3%, 46.1%, 50.0% for k = 8 here).

The same evaluation from a terminal, on the model and problems this script writes::

    uv run mrlm-train eval --model runs/eval_quickstart/sft/final \\
        --env-kwargs '{"records": "runs/eval_quickstart/problems.jsonl"}' -n 162 --max-new-tokens 24 \\
        --k 8 --temperature 1 -o runs/eval_quickstart/sampled.jsonl

About three minutes on two CPU cores, most of it the SFT warm-up (``--model`` skips it)::

    uv run python examples/eval_quickstart_pass_at_k.py
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from mrlm.train.evaluation import PlayConfig, format_table, play, reported_ks, save_episodes, summarise
from mrlm.train.quickstart import (
    DEMO_SEED_BASE,
    QuickstartConfig,
    easy_problems,
    sft_warmup,
    write_demonstrations,
)
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", help="a model to evaluate instead of warming one up")
    parser.add_argument("--sft-steps", type=int, default=QuickstartConfig.sft_steps, help="warm-up steps")
    parser.add_argument("--k", type=int, default=8, help="samples per problem")
    parser.add_argument("--problems", type=int, default=162, help="problems evaluated (162: all)")
    parser.add_argument("--output-dir", default="runs/eval_quickstart")
    args = parser.parse_args()
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)

    # 1. the task, and the model: the quickstart's, after its SFT warm-up
    problems = out / "problems.jsonl"
    problems.write_text("".join(json.dumps(p) + "\n" for p in easy_problems(seed=0)), encoding="utf-8")
    env_kwargs = {"records": str(problems)}
    if args.model:
        model = Path(args.model)
    else:
        quickstart = QuickstartConfig(sft_steps=args.sft_steps, progress_bar=False)
        tokenizer = build_tiny_tokenizer()
        initial = save_tiny(
            out / "initial",
            build_tiny_model(
                tokenizer,
                hidden_size=quickstart.hidden_size,
                num_layers=quickstart.num_layers,
                seed=quickstart.seed,
            ),
            tokenizer,
        )
        demos = write_demonstrations(
            env_kwargs,
            range(DEMO_SEED_BASE, DEMO_SEED_BASE + quickstart.demonstrations),
            out / "demonstrations.jsonl",
        )
        model = sft_warmup(demos, initial, out / "sft", args.sft_steps, quickstart)

    # 2. greedy: each problem once (the default seeds are the quickstart's evaluation seeds)
    config = PlayConfig(
        model=str(model),
        env_kwargs=json.dumps(env_kwargs),
        num_episodes=args.problems,
        max_new_tokens=QuickstartConfig.max_new_tokens,
        progress_bar=False,
    )
    greedy = summarise(play(config, 1).trajectories)
    print(f"\n{model}, greedy, each of {args.problems} problems once:")
    print(format_table(greedy))

    # 3. sampled: k replies per problem, pass@k for k = 1, 2, 4, ..., k
    played = play(dataclasses.replace(config, temperature=1.0), args.k)
    save_episodes(out / "sampled.jsonl", played.trajectories)
    sampled = summarise(played.trajectories, ks=reported_ks(args.k))
    print(f"\n{model}, {args.k} samples per problem at temperature 1:")
    print(format_table(sampled))
    rates = ", ".join(f"pass@{k} {value:.1%}" for k, value in sampled.overall.pass_at.items())
    print(f"\ngreedy success {greedy.overall.success_rate:.1%}; sampled: {rates}")
    print(f"episodes: {out / 'sampled.jsonl'}")


if __name__ == "__main__":
    main()
