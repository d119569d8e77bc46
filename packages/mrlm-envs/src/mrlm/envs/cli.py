"""The ``mrlm-envs`` command: list the registered envs, play one in a terminal, serve envs over gRPC."""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Annotated

import tyro

from mrlm.envs.play import Opponent, play
from mrlm.envs.registry import EnvArgumentError, UnknownEnvError, list_envs
from mrlm.envs.server.config import ServerConfig


def list_command(json_output: Annotated[bool, tyro.conf.arg(name="json")] = False) -> None:
    """List every registered env: id, kinds (gymnasium, aec, parallel) and a one-line description.

    Args:
        json_output: print a JSON list instead of a table.
    """
    entries = list_envs()
    if json_output:
        rows = [{"id": e.id, "kinds": list(e.kinds), "description": e.description} for e in entries]
        print(json.dumps(rows, indent=2))
        return
    width = max((len(e.id) for e in entries), default=2)
    kinds_width = max((len(",".join(e.kinds)) for e in entries), default=5)
    print(f"{'id':<{width}}  {'kinds':<{kinds_width}}  description")
    for e in entries:
        print(f"{e.id:<{width}}  {','.join(e.kinds):<{kinds_width}}  {e.description}")


def play_command(
    env_id: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="ENV_ID")],
    seed: int | None = None,
    agent: str | None = None,
    opponent: Opponent = "sample",
    kwargs: str = "{}",
) -> None:
    """Play one episode of ENV_ID: type the agent's replies and see observations, rewards and the end.

    Args:
        env_id: a registered id, such as mrlm/Math-v0 (see `mrlm-envs list`).
        seed: seed of the episode (the same seed gives the same task).
        agent: multi-agent envs: the seat to play (asked for when not given).
        opponent: multi-agent envs: the other seats reply with random text (sample) or are typed (human).
        kwargs: the env's keyword arguments as a JSON object, such as '{"level": 3}'.
    """
    try:
        env_kwargs = json.loads(kwargs)
    except json.JSONDecodeError as error:
        raise SystemExit(f"mrlm-envs play: --kwargs is not valid JSON: {error}") from None
    if not isinstance(env_kwargs, dict):
        raise SystemExit("mrlm-envs play: --kwargs must be a JSON object, such as '{\"level\": 3}'")
    remote_errors: tuple[type[Exception], ...] = ()
    if "://" in env_id:  # grpc loads only for a remote id
        from mrlm.envs.remote.errors import RemoteEnvError

        remote_errors = (RemoteEnvError,)
    try:
        play(env_id, seed=seed, agent=agent, opponent=opponent, env_kwargs=env_kwargs)
    except remote_errors as error:  # no server, a server that went away, a refused argument...
        raise SystemExit(f"mrlm-envs play: {error}") from None


def sandbox_command(json_output: Annotated[bool, tyro.conf.arg(name="json")] = False) -> None:
    """Show which isolation layers the code sandbox has on this machine, what bounds an execution's
    memory, and run a test program.

    Args:
        json_output: print JSON instead of text.
    """
    import dataclasses

    from mrlm.envs.sandbox import Sandbox

    sandbox = Sandbox.shared()
    report = sandbox.isolation
    result = sandbox.run("print(6 * 7)")
    if json_output:
        row = {**dataclasses.asdict(report), "active": list(report.active()), "test_run": result.status.value}
        print(json.dumps(row, indent=2))
        return
    print(f"backend: {report.backend or 'unknown'}")
    print(f"active:  {', '.join(report.active())}")
    scope = "all processes of an execution together" if report.memory_cgroup else "each process alone"
    print(f"memory:  {report.memory_bound} ({scope})")
    files = "hidden (interpreter and standard library only)" if report.private_filesystem else "visible"
    print(f"host files: {files}")
    for warning in report.warnings:
        print(f"warning: {warning}")
    print(f"test run: {result.status.value} ({result.duration_s * 1000:.1f} ms)")


_LOG_LEVELS = ("debug", "info", "warning", "error")


def serve_command(
    config: Annotated[ServerConfig, tyro.conf.arg(name="")],
    import_modules: Annotated[tuple[str, ...], tyro.conf.arg(name="import")] = (),
    log_level: str = "info",
) -> None:
    """Serve registered envs over gRPC until SIGTERM or SIGINT: one env instance per client session.

    Prints one line with the address once the server listens. Clients: mrlm.envs.remote, or
    mrlm.envs.make("grpc://HOST:PORT/ENV_ID"); several servers: grpc://HOST1:PORT1,HOST2:PORT2/ENV_ID.
    --processes N (Linux) runs N server processes on the port, each session in one of them.

    Clients may set only the keyword arguments each env declares, within its bounds (sandbox limits
    can only be lowered); no file path or URL unless --allow-records-dir / --allow-url-host allow it.
    See docs/remote.md.

    Args:
        import_modules: modules to import before serving, to register more envs (e.g. mypkg.envs); envs registered without client_args take only render_mode and small scalars from clients.
        log_level: logging level of the server's messages on stderr (debug, info, warning, error).
    """
    import importlib

    from mrlm.envs.server import run

    if log_level.lower() not in _LOG_LEVELS:
        raise SystemExit(f"mrlm-envs serve: --log-level {log_level!r} is not one of {', '.join(_LOG_LEVELS)}")
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for module in import_modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise SystemExit(f"mrlm-envs serve: cannot import {module!r}: {error}") from None
    try:
        run(
            config.with_environment(),
            announce=lambda line: print(line, flush=True),
            imports=import_modules,
            log_level=logging.getLogger().getEffectiveLevel(),
        )
    except OSError as error:
        raise SystemExit(f"mrlm-envs serve: {error}") from None


#: The exit status of a command stopped by Ctrl-C, as shells report a process ended by SIGINT.
INTERRUPTED = 130
#: The exit status when the reader of the output went away (``mrlm-envs list | head -1``), as
#: shells report a process ended by SIGPIPE.
BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``mrlm-envs``. Ctrl-C (while playing, say) ends it with one line and status
    :data:`INTERRUPTED`; ``serve`` stops on it gracefully by itself."""
    try:
        tyro.extras.subcommand_cli_from_dict(
            {"list": list_command, "play": play_command, "sandbox": sandbox_command, "serve": serve_command},
            args=argv,
            prog="mrlm-envs",
            description="MRLM text environments: list them, play them, check the code sandbox, serve them.",
        )
    except (UnknownEnvError, EnvArgumentError, ValueError) as error:
        raise SystemExit(f"mrlm-envs: {error}") from None
    except KeyboardInterrupt:
        print("mrlm-envs: interrupted", file=sys.stderr)
        raise SystemExit(INTERRUPTED) from None
    except BrokenPipeError:
        # Nothing is left to say to a reader that is gone; the output is pointed at /dev/null so
        # that the interpreter's flush at exit does not fail on it again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(BROKEN_PIPE) from None


if __name__ == "__main__":
    main()
