"""``mrlm-train train --config run.yaml [--output DIR] [--resume CKPT]``: the algorithm the file names.

The file's ``algorithm`` key names one of the training commands (``grpo``, ``ppo``, ``sft``,
``magrpo``, ...); the rest of the file is that command's config, exactly as ``mrlm-train <algorithm>
--config`` reads it. ``--output DIR`` stands for ``--run.output-dir DIR`` and ``--resume CKPT`` for
``--run.resume CKPT`` (``--resume`` alone: ``latest``); every other flag is the algorithm's own and
overrides the file::

    # run.yaml
    algorithm: grpo
    env_id: mrlm/Math-v0
    run: {max_steps: 100}

    mrlm-train train --config run.yaml --output runs/math --optim.learning-rate 1e-5
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mrlm.train.algorithms import ALGORITHMS
from mrlm.train.config_io import ConfigError, from_dict, load_mapping

COMMAND = "train"
#: The flags of ``train`` itself and the algorithm flags they stand for.
SHORTHANDS = {"--output": "--run.output-dir", "--resume": "--run.resume"}
#: What ``mrlm-train train --help`` prints.
HELP = """usage: mrlm-train train --config FILE [--output DIR] [--resume [CKPT]] [ALGORITHM FLAGS]

Run the algorithm a YAML file names. Its `algorithm:` key is one of
  {algorithms}
and the rest of the file is that algorithm's config, as `mrlm-train <algorithm> --config FILE` reads it.

  --config FILE    the run's file (required)
  --output DIR     stands for --run.output-dir DIR
  --resume [CKPT]  stands for --run.resume CKPT; alone, for --run.resume latest
  other flags      the algorithm's own (`mrlm-train <algorithm> --help`); they override the file

One file per algorithm: examples/train/*.yaml."""


def resolve_train(argv: Sequence[str], path: str, commands: dict[str, type]) -> tuple[str, list[str], Any]:
    """The algorithm ``path`` names, ``argv`` (without ``--config``) rewritten for its command, and
    the file's config as that command's defaults.

    Args:
        argv: the command line after ``--config FILE`` was taken out, ``train`` its first word.
        path: the config file.
        commands: each command's name and arguments dataclass.

    Raises:
        ConfigError: no ``algorithm`` key, one that names no training command, or a file that does
            not fit the algorithm's config (the message names the key).
    """
    data = dict(load_mapping(path))
    trainable = sorted(name for name in commands if name in ALGORITHMS)
    algorithm = data.pop("algorithm", None)
    if algorithm is None:
        raise ConfigError(f"{path}: `{COMMAND}` needs an `algorithm:` key, one of {', '.join(trainable)}")
    if algorithm not in trainable:
        raise ConfigError(f"{path}: unknown algorithm {algorithm!r}; known: {', '.join(trainable)}")
    defaults: Any = from_dict(commands[algorithm], data, where=str(Path(path)))
    rest = list(argv)
    rest[rest.index(COMMAND)] = algorithm
    return algorithm, _expand_shorthands(rest), defaults


def train_help(commands: Sequence[str]) -> str:
    """The text of ``mrlm-train train --help``, naming the algorithms among ``commands``."""
    return HELP.format(algorithms=", ".join(name for name in commands if name in ALGORITHMS))


def algorithm_config(name: str, path: str, cls: type) -> Any:
    """The config of ``mrlm-train <name> --config path``: the file's keys as ``cls``. An
    ``algorithm`` key may name this very algorithm (so a ``train`` file serves here too), but no
    other one.

    Raises:
        ConfigError: the file names another algorithm, or does not fit ``cls``.
    """
    data = dict(load_mapping(path))
    algorithm = data.pop("algorithm", name)
    if algorithm != name:
        raise ConfigError(
            f"{path}: the file is for {algorithm!r} (its `algorithm:` key), not {name!r}; "
            f"`mrlm-train {COMMAND} --config {path}` runs the algorithm it names"
        )
    return from_dict(cls, data, where=str(Path(path)))


def _expand_shorthands(argv: list[str]) -> list[str]:
    out: list[str] = []
    items = iter(range(len(argv)))
    for i in items:
        arg = argv[i]
        name, equals, value = arg.partition("=")
        if name not in SHORTHANDS:
            out.append(arg)
        elif equals:
            out += [SHORTHANDS[name], value]
        elif name == "--resume" and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out += [SHORTHANDS[name], "latest"]
        else:
            out.append(SHORTHANDS[name])
    return out
