"""The ``mrlm-train`` command line: one tyro subcommand per entry of ``COMMANDS``."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Annotated, Any, NoReturn, Union

import tyro

from mrlm.envs.registry import EnvArgumentError, UnknownEnvError
from mrlm.train.algorithms import ALGORITHMS
from mrlm.train.algorithms.multi_agent import MultiAgentSetupError
from mrlm.train.algorithms.online_dpo import NoPreferencePairsError
from mrlm.train.algorithms.ppo import CriticModelError
from mrlm.train.commands import COMMANDS
from mrlm.train.commands.train_file import COMMAND as TRAIN
from mrlm.train.commands.train_file import algorithm_config, resolve_train, train_help
from mrlm.train.config_io import ConfigError, checks_deferred, load_config
from mrlm.train.dpo import PreferenceDataError
from mrlm.train.evaluation.play import DeviceError
from mrlm.train.generation.memory import GenerationMemoryError
from mrlm.train.loop.distributed import exit_process
from mrlm.train.loop.errors import (
    CheckpointError,
    DistributedSetupError,
    NonFiniteError,
    OutputDirError,
    Terminated,
)
from mrlm.train.policy import ModelNotFoundError, NoChatTemplateError
from mrlm.train.rollout.errors import EnvFailedError, EnvOutputError, RewardOverflowError
from mrlm.train.rollout.policies import NoPolicyError
from mrlm.train.sft import SFTDataError

PROG = "mrlm-train"
#: Errors a run stops on whose message says what went wrong and where (a NaN loss and the last good
#: checkpoint, a checkpoint that fails verification, an unknown env id, a model path that holds no
#: model, a tokenizer without the chat template episodes need, an output directory that is a file, a
#: max_new_tokens too large to allocate, a reward that is no number, contradicting settings, an
#: agent the env lacks, a device the machine lacks, SFT or preference data that cannot be used);
#: anything else is a bug and keeps its traceback.
RUN_ERRORS: tuple[type[BaseException], ...] = (
    NonFiniteError,
    CheckpointError,
    DistributedSetupError,
    ConfigError,
    UnknownEnvError,
    EnvArgumentError,
    FileNotFoundError,
    ModelNotFoundError,
    NoChatTemplateError,
    OutputDirError,
    GenerationMemoryError,
    EnvOutputError,
    RewardOverflowError,
    MultiAgentSetupError,
    EnvFailedError,
    DeviceError,
    PreferenceDataError,
    NoPreferencePairsError,
    SFTDataError,
    CriticModelError,
    NoPolicyError,
)
DESCRIPTION = (
    "Train LLM agents with reinforcement learning on MRLM environments. "
    "`mrlm-train train --config run.yaml` runs the algorithm the file names (its `algorithm:` key)."
)


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the chosen subcommand, return its status.

    ``--help`` and usage errors exit through ``SystemExit`` as argparse does (status 0 and 2). A
    ``--config`` file that does not fit and the errors of ``RUN_ERRORS`` print one line on stderr,
    ``mrlm-train <command>: <ErrorType>: <message>``, and return 1.
    """
    # A Union of annotated dataclasses is tyro's subcommand form: it parses into an instance of
    # exactly one of them, which identifies the command to run.
    argv = list(sys.argv[1:] if argv is None else argv)
    refused: list[str] = []
    try:
        argv, defaults = _config_defaults(argv, refused)
    except ConfigError as error:
        return _report(error.command, error)
    command = next((c for c in COMMANDS if argv and c.name == argv[0]), None)
    repeated = _repeated_mapping_key(argv)
    if repeated is not None:  # a usage error, as tyro reports one
        print(f"{PROG} {command.name}: {repeated}" if command else f"{PROG}: {repeated}", file=sys.stderr)
        raise SystemExit(2)
    try:
        if command is None:  # no command first: the top-level help, or tyro's report of what is wrong
            args = _parse_command_line(argv, defaults)
            command = next(c for c in COMMANDS if isinstance(args, c.args))
        else:
            # Parsed as a command of its own, so that a bad value is reported under its flag's group,
            # not tyro's inner name for the union, and the pointer to help names the command's help.
            args = tyro.cli(
                command.args, args=argv[1:], prog=f"{PROG} {command.name}", default=defaults.get(command.name)
            )
    except SystemExit as usage:
        # tyro names a setting it refuses but not where its value came from: when the --config file
        # was refused on its own, say so, since flags after it may not have replaced that value.
        if usage.code not in (0, None) and refused:
            where = f"{PROG} {command.name}" if command is not None else PROG
            print(
                f"{where}: the --config file on its own is refused too: {'; '.join(refused)}", file=sys.stderr
            )
        raise
    try:
        return command.run(args)
    except Exception as error:
        if not explains_itself(error):
            raise
        return _report(command.name, error)


#: Flags whose values are ``key value`` pairs, parsed into a dict (the last pair of a key wins).
_MAPPING_FLAGS = ("--agent-models", "--agent_models")


def _repeated_mapping_key(argv: list[str]) -> str | None:
    """Why ``argv`` is refused when it gives one key of a mapping flag twice (tyro would keep the
    last value without a word, as a config file's repeated key is refused), else None."""
    for start, flag in enumerate(argv):
        if flag not in _MAPPING_FLAGS:
            continue
        values: dict[str, str] = {}
        pairs = argv[start + 1 :]
        end = next((i for i, token in enumerate(pairs) if token.startswith("--")), len(pairs))
        for key, value in zip(pairs[:end:2], pairs[1:end:2], strict=False):
            if key in values:
                return f"{flag} gives {key!r} twice ({values[key]!r}, then {value!r}): give each once"
            values[key] = value
    return None


def _parse_command_line(argv: list[str], defaults: dict[str, Any]) -> Any:
    """``argv`` parsed with every command as one of tyro's subcommands: the top-level help, and the
    usage errors of a command line that does not start with a command."""
    choices = tuple(
        Annotated[command.args, tyro.conf.subcommand(command.name, default=defaults.get(command.name))]
        if command.name in defaults
        else Annotated[command.args, tyro.conf.subcommand(command.name)]
        for command in COMMANDS
    )
    # Built at run time from COMMANDS, so it is a value to tyro and opaque (Any) to type checkers.
    union: Any = Union[choices]  # noqa: UP007
    return tyro.cli(union, args=argv, prog=PROG, description=DESCRIPTION)


def explains_itself(error: BaseException) -> bool:
    """Whether ``error`` is one of :data:`RUN_ERRORS` or an env server's (unreachable, refusing the
    token, busy, failing in its env: :class:`mrlm.envs.remote.RemoteEnvError`), whose messages say
    what happened. The remote errors' module is looked up, not imported: it loads grpc, and an error
    of it can only come from a run that loaded it."""
    remote = sys.modules.get("mrlm.envs.remote.errors")
    return isinstance(error, RUN_ERRORS) or (remote is not None and isinstance(error, remote.RemoteEnvError))


def _report(command: str, error: BaseException) -> int:
    """Print an error that carries its own explanation as one line, without traceback; return 1."""
    message = " ".join(str(error).split())  # one line even when a message quotes a multi-line cause
    print(f"{PROG} {command}: {type(error).__name__}: {message}", file=sys.stderr)
    return 1


def _config_defaults(argv: list[str], refused: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Take ``--config FILE`` out of ``argv``; load it as the defaults of the chosen subcommand.

    Flags given after it still override the file, since tyro parses them over these defaults. With
    such flags, the file's values that its config's checks refuse are kept for them to replace, and
    each refusal's message is appended to ``refused``.
    """
    first_word = next((a for a in argv if not a.startswith("-")), None)
    if first_word == TRAIN and {"-h", "--help"} & set(argv):
        print(train_help([c.name for c in COMMANDS]))
        raise SystemExit(0)
    if "--config" not in argv and not any(a.startswith("--config=") for a in argv):
        if first_word == TRAIN:
            raise SystemExit(
                f"{PROG}: `{TRAIN}` needs --config FILE, a file whose `algorithm:` names the algorithm"
            )
        return argv, {}
    rest: list[str] = []
    path: str | None = None
    items = iter(argv)
    for arg in items:
        if arg == "--config":
            path = next(items, None)
            if path is None:
                raise SystemExit(f"{PROG}: --config needs a file path")
        elif arg.startswith("--config="):
            path = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    name = next((a for a in rest if not a.startswith("-")), None)
    assert path is not None
    # With flags after the file, a value the file gets wrong may be one they replace: the config
    # built from both is checked instead (tyro names the setting if it is still wrong).
    deferred: contextlib.AbstractContextManager[list[str]] = (
        checks_deferred() if any(arg.startswith("-") for arg in rest) else contextlib.nullcontext([])
    )
    if name == TRAIN:
        try:
            with deferred as refusals:
                algorithm, rest, defaults = resolve_train(rest, path, {c.name: c.args for c in COMMANDS})
        except ConfigError as error:
            error.command = TRAIN
            raise
        refused.extend(refusals)
        return rest, {algorithm: defaults}
    command = next((c for c in COMMANDS if c.name == name), None)
    if command is None:
        raise SystemExit(
            f"{PROG}: --config needs a subcommand that takes one, such as `{PROG} grpo --config run.yaml`"
        )
    try:
        with deferred as refusals:
            if command.name in ALGORITHMS:
                defaults = algorithm_config(command.name, path, command.args)
            else:
                defaults = load_config(command.args, path)
        refused.extend(refusals)
        return rest, {command.name: defaults}
    except ConfigError as error:
        error.command = command.name
        raise


#: The exit statuses of a command stopped by Ctrl-C and by SIGTERM, as shells report a process
#: ended by SIGINT and SIGTERM.
INTERRUPTED = 128 + signal.SIGINT
TERMINATED = 128 + signal.SIGTERM
#: The exit status when the reader of the output went away (``mrlm-train grpo --help | head -1``),
#: as shells report a process ended by SIGPIPE.
BROKEN_PIPE = 128 + signal.SIGPIPE


def entry() -> NoReturn:
    """The ``mrlm-train`` console script: :func:`main`, then the exit (see
    :func:`~mrlm.train.loop.distributed.exit_process`). Ctrl-C and SIGTERM (a scheduler preempting
    the job) end it with one line and status :data:`INTERRUPTED` or :data:`TERMINATED`, a run having
    saved its last finished step by then (see docs/checkpoints.md). In a worker of a run of several
    processes SIGTERM keeps its default, ending the process at once: such a run saves nothing at a
    failure, and a worker waiting in a collective for a peer that is gone would not run the handler
    until the collective timed out, long after torchrun's own grace period."""
    single = int(os.environ.get("WORLD_SIZE", "1") or "1") <= 1
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if single else None
    try:
        status = main()
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        status = INTERRUPTED
    except Terminated:
        print(f"{PROG}: terminated (SIGTERM)", file=sys.stderr)
        status = TERMINATED
    except BrokenPipeError:
        # Nothing is left to say to a reader that is gone; the output is pointed at /dev/null so
        # that the interpreter's flush at exit does not fail on it again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = BROKEN_PIPE
    finally:
        if single:
            signal.signal(signal.SIGTERM, previous)
    exit_process(status)


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


if __name__ == "__main__":
    entry()
