"""GRPO steps per second of MRLM and of TRL's GRPOTrainer on the same tiny model and work. Prints JSON.

Both libraries train the same thing, built here with nothing downloaded:

* a byte-level BPE tokenizer trained on synthetic arithmetic strings, with ``<|pad|>``,
  ``<|endoftext|>`` and a minimal chat template;
* a randomly initialised Qwen2 (or Llama) causal LM from a config, saved with ``save_pretrained``
  and loaded back from that directory;
* prompts "What is a+b?" (a, b in 0..20) and a reward of 1 when the reply contains the sum;
* one optimizer step = ``prompts_per_step * group_size`` completions of exactly ``max_new_tokens``
  tokens (stop tokens ignored unless ``--allow-early-eos``), one update pass, no reference model
  (``--beta 0``), the DAPO token-mean loss, fp32 on CPU.

MRLM runs its real trainer (:func:`mrlm.train.algorithms.grpo.train`) on a small Gymnasium env
registered here; TRL runs ``GRPOTrainer`` on a dataset of the same prompts. Both report the same
keys (library, versions, device, torch_threads, settings, results, diagnostics, per_step_s,
per_step_gen_s). A step is timed from its start to the end of its optimizer update; its generation
time is TRL's ``_generate`` (prompt tokenization, ``model.generate``, decoding) and MRLM's rollout
(env resets and steps, chat template, generation, decoding).

``--library both`` (the default) runs each library in a fresh subprocess, ``--rounds`` times,
alternating which goes first, so both see the same machine load and each reports its own peak RSS.
It prints ``{"mrlm": ..., "trl": ..., "rounds": [...], "comparison": {...}}``, the per-library
entries being the round with the median step time. Without TRL (it needs Python >= 3.11) only MRLM
runs and ``"trl"`` says why.

Side by side at the reference setting (and at hidden 512 / 4 layers with ``--hidden 512 --layers 4
--heads 8 --kv-heads 2``)::

    uv run python benchmarks/grpo_throughput.py --steps 20 --rounds 3
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal

# Offline, on CPU, quiet; set before any Hugging Face library is imported.
for _name, _value in {
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "CUDA_VISIBLE_DEVICES": "",
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "WANDB_DISABLED": "true",
}.items():
    os.environ.setdefault(_name, _value)

LIBRARIES = ("mrlm", "trl")
ENV_ID = "benchmark/AddTwo-v0"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # what is measured
    p.add_argument("--library", choices=["mrlm", "trl", "both"], default="both")
    p.add_argument("--rounds", type=int, default=1, help="with --library both: runs of each library")
    # workload
    p.add_argument("--steps", type=int, default=20, help="optimizer steps (= generation rounds)")
    p.add_argument("--prompts-per-step", type=int, default=2)
    p.add_argument("--group-size", type=int, default=8, help="completions per prompt")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument(
        "--allow-early-eos",
        action="store_true",
        help="let replies end at a stop token (default: every reply has exactly max_new_tokens tokens)",
    )
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--warmup-steps", type=int, default=2, help="first steps left out of the steady figures")
    # model
    p.add_argument("--arch", choices=["qwen2", "llama"], default="qwen2")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--intermediate", type=int, default=None, help="MLP width (default 4 * hidden)")
    p.add_argument("--vocab-size", type=int, default=512, help="BPE vocabulary to train (may end smaller)")
    p.add_argument("--max-positions", type=int, default=512)
    # algorithm
    p.add_argument("--loss-type", default="dapo", choices=sorted(AGGREGATIONS))
    p.add_argument("--beta", type=float, default=0.0, help="KL coefficient; > 0 adds a reference model")
    p.add_argument("--scale-rewards", default="group", choices=["group", "batch", "none"])
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--gradient-checkpointing", action="store_true")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (default fp32)")
    # runtime
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: TRL all cores, MRLM the cores other processes leave free)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--work-dir", default=None, help="where models and runs go (default: a fresh temporary one)"
    )
    p.add_argument("--out-json", default=None, help="also write the JSON here")
    p.add_argument("--quiet", action="store_true", help="silence library logging and warnings")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.steps < 1:
        p.error("--rounds and --steps must be at least 1")
    return args


#: TRL loss type -> the MRLM aggregation that computes the same loss here (one micro-batch per step).
AGGREGATIONS: dict[str, Literal["sequence_mean", "token_mean", "constant"]] = {
    "dapo": "token_mean",
    "bnpo": "token_mean",
    "grpo": "sequence_mean",
    "dr_grpo": "constant",
}


# ---------------------------------------------------------------------------------- shared workload

SPECIAL_TOKENS = {"pad": "<|pad|>", "eos": "<|endoftext|>", "bos": "<|startoftext|>"}
ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)
CORPUS_TEMPLATES = [
    "What is {a}+{b}? The answer is {c}.",
    "Compute {a} plus {b}. Result: {c}",
    "{a} + {b} = {c}",
    "Q: What is {a}+{b}? A: {c}",
    "The sum of {a} and {b} is {c}.",
    "Let me think. {a} plus {b} makes {c}, so the answer is {c}.",
]


def addition(rng: random.Random) -> tuple[int, int]:
    """The two terms of one task."""
    return rng.randint(0, 20), rng.randint(0, 20)


def question(a: int, b: int) -> str:
    return f"What is {a}+{b}?"


def reward(reply: str, answer: str) -> float:
    """1 when one of the reply's numbers is the answer, else 0."""
    return 1.0 if answer in re.findall(r"\d+", reply) else 0.0


def build_tokenizer(vocab_size: int, rng: random.Random) -> Any:
    """Byte-level BPE trained on 600 synthetic arithmetic strings, as a fast HF tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = []
    for _ in range(600):
        a, b = addition(rng)
        corpus.append(rng.choice(CORPUS_TEMPLATES).format(a=a, b=b, c=a + b))
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        corpus,
        trainer=trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=[*SPECIAL_TOKENS.values(), *ROLE_TOKENS],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        pad_token=SPECIAL_TOKENS["pad"],
        eos_token=SPECIAL_TOKENS["eos"],
        bos_token=SPECIAL_TOKENS["bos"],
        additional_special_tokens=ROLE_TOKENS,
        padding_side="left",
        truncation_side="left",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_model(args: argparse.Namespace, tokenizer: Any) -> Any:
    """A randomly initialised causal LM of the configured shape (seeded by ``--seed``)."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, LlamaConfig, Qwen2Config

    config_class = Qwen2Config if args.arch == "qwen2" else LlamaConfig
    config = config_class(
        vocab_size=len(tokenizer),
        hidden_size=args.hidden,
        intermediate_size=args.intermediate or 4 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=args.max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(args.seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return model


def save_workload(args: argparse.Namespace, directory: Path) -> tuple[random.Random, int, int]:
    """Build tokenizer and model and save both to ``directory``.

    Returns the RNG, which goes on to draw the prompts, the vocabulary size and the parameter count.
    """
    rng = random.Random(args.seed)
    tokenizer = build_tokenizer(args.vocab_size, rng)
    model = build_model(args, tokenizer)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(directory)
    model.save_pretrained(directory)
    return rng, len(tokenizer), sum(p.numel() for p in model.parameters())


class Counters:
    """What the reward saw, summed over the run (the same in both libraries)."""

    completions = 0
    reward_sum = 0.0
    threads_at_reward: ClassVar[dict[int, int]] = {}  # torch's thread count when each reply was scored


# ---------------------------------------------------------------------------------- measurements


def rss_mb() -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def host_cpu_ticks() -> dict[str, int]:
    """Whole-machine CPU counters (``/proc/stat``): show how busy the neighbours were."""
    try:
        with open("/proc/stat") as stat:
            v = [int(x) for x in stat.readline().split()[1:]]
        return {"user": v[0] + v[1], "system": v[2], "idle": v[3], "iowait": v[4], "steal": v[7]}
    except (OSError, IndexError, ValueError):
        return {}


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


class Clock:
    """Process CPU time, host CPU ticks and wall time around the training call."""

    def __enter__(self) -> Clock:
        self.usage, self.host, self.start = resource.getrusage(resource.RUSAGE_SELF), host_cpu_ticks(), 0.0
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.start
        usage, host = resource.getrusage(resource.RUSAGE_SELF), host_cpu_ticks()
        hz = os.sysconf("SC_CLK_TCK")
        cpu = (usage.ru_utime - self.usage.ru_utime) + (usage.ru_stime - self.usage.ru_stime)
        self.diagnostics = {
            "proc_cpu_s": round(cpu, 2),
            "proc_cpu_util": round(cpu / self.wall, 2),
            "involuntary_ctx_switches": usage.ru_nivcsw - self.usage.ru_nivcsw,
            "host_cpu_s_during_train": {k: round((host[k] - self.host[k]) / hz, 2) for k in host}
            if host and self.host
            else {},
            "loadavg_after": loadavg(),
        }


def summarise(
    args: argparse.Namespace,
    *,
    library: str,
    versions: dict[str, str],
    vocab: int,
    n_params: int,
    step_s: list[float],
    gen_s: list[float],
    tokens: list[int],
    rewards: list[float],
    rss_after_init: float,
    clock: Clock,
    script_start: float,
) -> dict[str, Any]:
    """One library's report, with the keys of TRL's reference benchmark."""
    import torch

    completions_per_step = args.prompts_per_step * args.group_size
    w = min(args.warmup_steps, max(0, len(step_s) - 1))
    steady, steady_gen, steady_tokens = step_s[w:], gen_s[w:], tokens[w:]
    total_tokens = sum(tokens)
    total_completions = completions_per_step * len(step_s)
    return {
        "library": library,
        "versions": {**versions, "torch": torch.__version__, "python": sys.version.split()[0]},
        "device": "cpu",
        "torch_threads": torch.get_num_threads(),
        "settings": {
            "steps": args.steps,
            "prompts_per_step": args.prompts_per_step,
            "group_size": args.group_size,
            "completions_per_step": completions_per_step,
            "max_new_tokens": args.max_new_tokens,
            "force_full_length": not args.allow_early_eos,
            "arch": args.arch,
            "hidden": args.hidden,
            "layers": args.layers,
            "heads": args.heads,
            "kv_heads": args.kv_heads,
            "intermediate": args.intermediate or 4 * args.hidden,
            "vocab": vocab,
            "n_params": n_params,
            "loss_type": args.loss_type,
            "beta": args.beta,
            "lr": args.lr,
            "gradient_checkpointing": args.gradient_checkpointing,
            "dtype": "bf16" if args.bf16 else "fp32",
        },
        "results": {
            "steps_run": len(step_s),
            "train_wall_s": round(clock.wall, 3),
            "step_s_mean_all": round(statistics.mean(step_s), 4),
            "step_s_mean_steady": round(statistics.mean(steady), 4),
            "step_s_median_steady": round(statistics.median(steady), 4),
            "step_s_min": round(min(step_s), 4),
            "step_s_max": round(max(step_s), 4),
            "first_step_s": round(step_s[0], 4),
            "gen_s_mean_steady": round(statistics.mean(steady_gen), 4) if steady_gen else None,
            "gen_fraction_steady": round(sum(steady_gen) / sum(steady), 3) if steady_gen else None,
            "completions_per_s_steady": round(completions_per_step * len(steady) / sum(steady), 2),
            "gen_tokens_per_s_steady": round(sum(steady_tokens) / sum(steady), 1),
            "gen_tokens_per_s_generation_only": round(sum(steady_tokens) / sum(steady_gen), 1)
            if steady_gen
            else None,
            "completions_per_s_overall": round(total_completions / clock.wall, 2),
            "gen_tokens_per_s_overall": round(total_tokens / clock.wall, 1),
            "total_completion_tokens": total_tokens,
            "mean_completion_len": round(total_tokens / max(1, total_completions), 2),
            "reward_mean_first": rewards[0] if rewards else None,
            "reward_mean_last": rewards[-1] if rewards else None,
            "reward_mean_all": round(Counters.reward_sum / max(1, Counters.completions), 4),
            "rss_after_init_mb": round(rss_after_init, 1),
            "peak_rss_mb": round(peak_rss_mb(), 1),
            "total_script_wall_s": round(time.perf_counter() - script_start, 2),
        },
        "diagnostics": {**clock.diagnostics, "threads_at_reward": Counters.threads_at_reward},
        "per_step_s": [round(x, 4) for x in step_s],
        "per_step_gen_s": [round(x, 4) for x in gen_s],
    }


# ---------------------------------------------------------------------------------- MRLM


def run_mrlm(args: argparse.Namespace, script_start: float) -> dict[str, Any]:
    """Train with :func:`mrlm.train.algorithms.grpo.train` on the addition env; return the report."""
    import gymnasium
    import torch

    from mrlm.train.algorithms.grpo import GRPOConfig, train
    from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig
    from mrlm.train.loop.metrics import METRICS_FILE, read_metrics
    from mrlm.train.policy import ModelConfig

    if args.quiet:
        importlib.import_module("transformers").logging.set_verbosity_error()
    work = Path(args.work_dir) / "mrlm"
    model_dir, run_dir = work / "model", work / "run"
    _, vocab, n_params = save_workload(args, model_dir)
    shutil.rmtree(run_dir, ignore_errors=True)  # a run refuses a directory holding older checkpoints
    rss_at_start: list[float] = []

    class AddTwo(gymnasium.Env[str, str]):
        """One question "What is a+b?" (a, b from the reset seed); reward 1 if the reply contains a+b."""

        def reset(
            self, *, seed: int | None = None, options: dict[str, Any] | None = None
        ) -> tuple[str, dict[str, Any]]:
            super().reset(seed=seed)
            if not rss_at_start:  # the first reset comes once the trainer is set up
                rss_at_start.append(rss_mb())
            a, b = addition(random.Random(seed))
            self.answer = str(a + b)
            return question(a, b), {}

        def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
            value = reward(action, self.answer)
            Counters.completions += 1
            Counters.reward_sum += value
            threads = torch.get_num_threads()
            Counters.threads_at_reward[threads] = Counters.threads_at_reward.get(threads, 0) + 1
            return "", value, True, False, {}

    def make_env(**_: Any) -> AddTwo:
        return AddTwo()

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=make_env, disable_env_checker=True)
    batch = args.prompts_per_step * args.group_size
    config = GRPOConfig(
        env_id=ENV_ID,
        model=ModelConfig(
            name_or_path=str(model_dir), dtype="float32", gradient_checkpointing=args.gradient_checkpointing
        ),
        group_size=args.group_size,
        prompts_per_step=args.prompts_per_step,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        ignore_stop=not args.allow_early_eos,
        std_scaling=args.scale_rewards,
        aggregation=AGGREGATIONS[args.loss_type],
        kl_coef=args.beta,
        micro_batch_size=batch,
        run=RunConfig(output_dir=str(run_dir), max_steps=args.steps, seed=args.seed, progress_bar=False),
        # TRL's defaults: AdamW, no weight decay, linear decay to 0, gradients clipped at norm 1.
        optim=OptimConfig(learning_rate=args.lr, lr_schedule="linear", max_grad_norm=1.0),
        # Without --threads, MRLM's default: follow the cores that other processes leave free.
        dist=DistributedConfig(
            cpu=True, mixed_precision="bf16" if args.bf16 else "no", cpu_threads=args.threads or 0
        ),
    )
    with Clock() as clock:
        train(config)
    rows = read_metrics(run_dir / METRICS_FILE)
    return summarise(
        args,
        library="mrlm",
        versions={
            "mrlm-train": importlib.metadata.version("mrlm-train"),
            "transformers": _version("transformers"),
        },
        vocab=vocab,
        n_params=n_params,
        step_s=[row["step_s"] for row in rows],
        gen_s=[row["rollout_s"] for row in rows],
        tokens=[round(row["tokens_per_s"] * row["step_s"]) for row in rows],
        rewards=[row["reward"] for row in rows],
        rss_after_init=rss_at_start[0] if rss_at_start else float("nan"),
        clock=clock,
        script_start=script_start,
    )


# ---------------------------------------------------------------------------------- TRL


def run_trl(args: argparse.Namespace, script_start: float) -> dict[str, Any]:
    """Train with TRL's ``GRPOTrainer`` on a dataset of the same prompts; return the report."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    datasets: Any = importlib.import_module("datasets")
    transformers: Any = importlib.import_module("transformers")
    trl: Any = importlib.import_module("trl")
    if args.quiet:
        transformers.logging.set_verbosity_error()

    work = Path(args.work_dir) / "trl"
    rng, _, _ = save_workload(args, work / "model")
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        work / "model", padding_side="left", truncation_side="left"
    )
    prompts, answers = [], []
    for _ in range(max(64, 2 * args.steps * args.prompts_per_step)):
        a, b = addition(rng)
        prompts.append([{"role": "user", "content": question(a, b)}])
        answers.append(str(a + b))
    dataset = datasets.Dataset.from_dict({"prompt": prompts, "answer": answers})
    tokens: list[int] = []

    def contains_answer(completions: list[Any], answer: list[str], **_: Any) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        values = [reward(text, ans) for text, ans in zip(texts, answer, strict=True)]
        Counters.completions += len(values)
        Counters.reward_sum += sum(values)
        threads = torch.get_num_threads()
        Counters.threads_at_reward[threads] = Counters.threads_at_reward.get(threads, 0) + len(values)
        return values

    batch = args.prompts_per_step * args.group_size
    config = trl.GRPOConfig(
        output_dir=str(work / "out"),
        use_cpu=True,
        use_vllm=False,
        bf16=args.bf16,
        fp16=False,
        report_to="none",
        save_strategy="no",
        push_to_hub=False,
        dataloader_num_workers=0,
        disable_tqdm=True,
        logging_steps=1,
        max_steps=args.steps,
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_iterations=1,
        num_generations=args.group_size,
        max_completion_length=args.max_new_tokens,
        temperature=args.temperature,
        generation_kwargs=None if args.allow_early_eos else {"min_new_tokens": args.max_new_tokens},
        gradient_checkpointing=args.gradient_checkpointing,
        loss_type=args.loss_type,
        beta=args.beta,
        scale_rewards=args.scale_rewards,
        learning_rate=args.lr,
        model_init_kwargs={"dtype": "float32"},
        seed=args.seed,
    )
    trainer = trl.GRPOTrainer(
        model=str(work / "model"),
        reward_funcs=contains_answer,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    n_params = sum(p.numel() for p in trainer.model.parameters())
    rss_after_init = rss_mb()

    step_s: list[float] = []
    gen_s: list[float] = []
    rewards: list[float] = []
    generate, generate_and_score = trainer._generate, trainer._generate_and_score_completions

    def timed_generate(*a: Any, **k: Any) -> Any:
        start = time.perf_counter()
        out = generate(*a, **k)
        gen_s.append(time.perf_counter() - start)
        return out

    def counted_generate_and_score(*a: Any, **k: Any) -> Any:
        out = generate_and_score(*a, **k)
        tokens.append(int(out["completion_mask"].sum().item()))
        return out

    trainer._generate = timed_generate
    trainer._generate_and_score_completions = counted_generate_and_score

    class StepTimer(transformers.TrainerCallback):
        def on_step_begin(self, *_: Any, **__: Any) -> None:
            self.start = time.perf_counter()

        def on_step_end(self, *_: Any, **__: Any) -> None:
            step_s.append(time.perf_counter() - self.start)

        def on_log(self, *_: Any, logs: dict[str, Any] | None = None, **__: Any) -> None:
            if logs and "reward" in logs:
                rewards.append(float(logs["reward"]))

    trainer.add_callback(StepTimer())
    with Clock() as clock:
        trainer.train()
    return summarise(
        args,
        library="trl",
        versions={"trl": trl.__version__, "transformers": transformers.__version__},
        vocab=len(tokenizer),
        n_params=n_params,
        step_s=step_s,
        gen_s=gen_s,
        tokens=tokens,
        rewards=rewards,
        rss_after_init=rss_after_init,
        clock=clock,
        script_start=script_start,
    )


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


# ---------------------------------------------------------------------------------- side by side


def child_argv(args: argparse.Namespace, library: str, out_json: Path) -> list[str]:
    """The command line of one library's run: every workload flag as given, one library."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--library", library, "--out-json", str(out_json)]
    for key, value in vars(args).items():
        if key in ("library", "rounds", "out_json") or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return argv


def run_both(args: argparse.Namespace) -> dict[str, Any]:
    """Alternate the libraries in fresh subprocesses for ``--rounds`` rounds; compare their medians."""
    libraries = list(LIBRARIES)
    skipped: dict[str, Any] = {}
    if importlib.util.find_spec("trl") is None:
        libraries = ["mrlm"]
        skipped["trl"] = {
            "skipped": f"trl is not importable with Python {sys.version.split()[0]}: it is a dev "
            "dependency for Python >= 3.11 (uv sync installs it there)"
        }
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    started_load = loadavg()
    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        order = libraries if r % 2 == 0 else libraries[::-1]
        reports: dict[str, Any] = {}
        for library in order:
            out = work / f"{library}-round{r}.json"
            result = subprocess.run(
                child_argv(args, library, out), capture_output=True, text=True, check=False
            )
            if result.returncode != 0:
                raise RuntimeError(f"the {library} run failed:\n{result.stderr[-4000:]}")
            reports[library] = json.loads(out.read_text())
            reports[library]["diagnostics"]["loadavg_after"] = loadavg()
        rounds.append(reports)

    def step_time(report: dict[str, Any]) -> float:
        return float(report["results"]["step_s_median_steady"])

    output: dict[str, Any] = {}
    for library in libraries:
        ordered = sorted((rnd[library] for rnd in rounds), key=step_time)
        output[library] = ordered[(len(ordered) - 1) // 2]
    output.update(skipped)
    output["rounds"] = [
        {
            library: {
                key: rnd[library]["results"][key]
                for key in ("step_s_mean_steady", "step_s_median_steady", "gen_s_mean_steady", "peak_rss_mb")
            }
            | {"loadavg_after": rnd[library]["diagnostics"]["loadavg_after"]}
            for library in libraries
        }
        for rnd in rounds
    ]
    comparison: dict[str, Any] = {"loadavg_before": started_load, "loadavg_after": loadavg()}
    if "trl" in libraries:
        ratios = [step_time(rnd["trl"]) / step_time(rnd["mrlm"]) for rnd in rounds]
        mean_ratios = [
            rnd["trl"]["results"]["step_s_mean_steady"] / rnd["mrlm"]["results"]["step_s_mean_steady"]
            for rnd in rounds
        ]
        peaks = {lib: max(rnd[lib]["results"]["peak_rss_mb"] for rnd in rounds) for lib in libraries}
        comparison |= {
            "steps_per_s_ratio": round(statistics.median(ratios), 3),
            "steps_per_s_ratio_per_round": [round(x, 3) for x in ratios],
            "steps_per_s_ratio_of_means": round(statistics.median(mean_ratios), 3),
            "peak_rss_ratio": round(peaks["mrlm"] / peaks["trl"], 3),
            "peak_rss_mb": peaks,
            "statistic": "per round: TRL's median steady step time / MRLM's; median over rounds",
        }
    output["comparison"] = comparison
    return output


def main(argv: list[str] | None = None) -> dict[str, Any]:
    script_start = time.perf_counter()
    args = parse_args(argv)
    if args.quiet:
        import warnings

        warnings.filterwarnings("ignore")
    runners: dict[str, Callable[[argparse.Namespace, float], dict[str, Any]]] = {
        "mrlm": run_mrlm,
        "trl": run_trl,
    }
    with tempfile.TemporaryDirectory(prefix="grpo_throughput_") as scratch:
        if args.work_dir is None:
            args.work_dir = scratch
        report = run_both(args) if args.library == "both" else runners[args.library](args, script_start)
    text = json.dumps(report, indent=2)
    if args.out_json:
        Path(args.out_json).write_text(text + "\n")
    print(text)
    return report


if __name__ == "__main__":
    main()
