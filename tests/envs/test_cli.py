"""``mrlm-envs list`` and ``mrlm-envs play``, driven the way a person would drive them."""

from __future__ import annotations

import io
import json
import signal
import socket
import subprocess
import sys

import pytest

from mrlm.envs.cli import main
from mrlm.envs.core.spaces import DEFAULT_MAX_ACTION_LENGTH
from mrlm.envs.play import Terminal, play


def test_list_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    main(["list"])
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == ["id", "kinds", "description"]
    assert any(line.startswith("mrlm/Math-v0") and "gymnasium" in line for line in table.splitlines())
    main(["list", "--json"])
    rows = json.loads(capsys.readouterr().out)
    math_row = next(row for row in rows if row["id"] == "mrlm/Math-v0")
    assert math_row["kinds"] == ["gymnasium"] and math_row["description"]


def _terminal(typed: str) -> tuple[Terminal, io.StringIO]:
    out = io.StringIO()
    return Terminal(stdin=io.StringIO(typed), stdout=out), out


def test_play_single_agent_shows_task_reward_and_end() -> None:
    import mrlm.envs

    env = mrlm.envs.make("mrlm/Math-v0", level=1)
    env.reset(seed=2)
    answer = env.unwrapped.task.answer
    terminal, out = _terminal(f"my guess\n\\boxed{{-1000}}\n.\nthen\n\\boxed{{{answer}}}\n.\n")
    totals = play("mrlm/Math-v0", seed=2, env_kwargs={"level": 1, "max_turns": 2}, terminal=terminal)
    text = out.getvalue()
    assert totals == {"": 1.0}
    assert "[system]" in text and env.unwrapped.task.question in text
    assert "That answer is not correct" in text and "reward: 0" in text
    assert "Correct." in text and "reward: 1" in text
    assert "Episode over (terminated). Total reward: 1" in text


def test_play_stops_on_quit_and_on_end_of_input() -> None:
    terminal, out = _terminal("/quit\n")
    assert play("mrlm/Math-v0", seed=0, terminal=terminal) == {}
    assert "Stopped." in out.getvalue()
    terminal, out = _terminal("")
    assert play("mrlm/Math-v0", seed=0, terminal=terminal) == {}


def test_play_multi_agent_asks_for_a_seat_and_plays_the_others() -> None:
    # AEC game: the person picks player_1 after a wrong choice; the other seat types random text.
    terminal, out = _terminal("nobody\nplayer_1\n" + "pear\n.\n" * 3)
    totals = play("mrlm-test/GuessWord-v0", seed=0, env_kwargs={"rounds": 3}, terminal=terminal)
    text = out.getvalue()
    assert "Which agent do you play? [player_0/player_1]" in text
    assert "Please type one of: player_0, player_1" in text
    assert text.count("Your reply as player_1") == 3
    assert "[player_0] (random)" in text
    assert set(totals) == {"player_0", "player_1"}


def test_play_parallel_with_a_human_opponent() -> None:
    import mrlm.envs

    env = mrlm.envs.make("mrlm-test/GuessNumber-v0")
    env.reset(seed=1)
    secret = env.secret
    typed = f"{secret}\n.\n{(secret + 40) % 100}\n.\n"
    terminal, out = _terminal(typed)
    totals = play(
        "mrlm-test/GuessNumber-v0",
        seed=1,
        agent="player_0",
        opponent="human",
        env_kwargs={"rounds": 1},
        terminal=terminal,
    )
    assert totals == {"player_0": 1.0, "player_1": 0.0}
    assert "Reply for player_1" in out.getvalue()


def test_play_asks_again_for_a_reply_over_max_action_length() -> None:
    import mrlm.envs

    env = mrlm.envs.make("mrlm/Math-v0", level=1)
    env.reset(seed=2)
    answer = env.unwrapped.task.answer
    too_long = "x" * (DEFAULT_MAX_ACTION_LENGTH + 1)
    terminal, out = _terminal(f"{too_long}\n.\n\\boxed{{{answer}}}\n.\n")
    # The refused reply does not end the session (the env would raise on it): the episode goes on.
    assert play("mrlm/Math-v0", seed=2, env_kwargs={"level": 1}, terminal=terminal) == {"": 1.0}
    text = out.getvalue()
    assert (
        f"That reply has {len(too_long)} characters; this env accepts at most "
        f"{DEFAULT_MAX_ACTION_LENGTH} (max_action_length)"
    ) in text
    assert text.count("Your reply (") == 2 and "Correct." in text


def test_play_multi_agent_asks_again_for_replies_over_max_action_length() -> None:
    import mrlm.envs

    too_long = "7" * (DEFAULT_MAX_ACTION_LENGTH + 1)
    refusal = f"That reply has {len(too_long)} characters; this env accepts at most"
    # Parallel, the person's seat and a typed opponent: each refused reply is asked for again.
    env = mrlm.envs.make("mrlm-test/GuessNumber-v0")
    env.reset(seed=1)
    secret = env.secret
    typed = f"{too_long}\n.\n{secret}\n.\n{too_long}\n.\n{(secret + 40) % 100}\n.\n"
    terminal, out = _terminal(typed)
    totals = play(
        "mrlm-test/GuessNumber-v0",
        seed=1,
        agent="player_0",
        opponent="human",
        env_kwargs={"rounds": 1},
        terminal=terminal,
    )
    assert totals == {"player_0": 1.0, "player_1": 0.0}
    assert out.getvalue().count(refusal) == 2
    # AEC: the person's seat.
    terminal, out = _terminal(f"{too_long}\n.\npear\n.\n")
    totals = play(
        "mrlm-test/GuessWord-v0", seed=0, agent="player_1", env_kwargs={"rounds": 1}, terminal=terminal
    )
    assert set(totals) == {"player_0", "player_1"}
    assert out.getvalue().count(refusal) == 1


def test_play_unknown_seat_is_a_clear_error() -> None:
    terminal, _ = _terminal("")
    with pytest.raises(ValueError, match="no agent 'ghost'"):
        play("mrlm-test/GuessNumber-v0", agent="ghost", terminal=terminal)


def test_cli_errors_exit_with_a_message() -> None:
    with pytest.raises(SystemExit, match="unknown env id 'mrlm/Nope-v0'"):
        main(["play", "mrlm/Nope-v0"])
    with pytest.raises(SystemExit, match=r"^mrlm-envs play: --kwargs is not valid JSON"):
        main(["play", "mrlm/Math-v0", "--kwargs", "{level: 1"])
    with pytest.raises(SystemExit, match=r"^mrlm-envs play: --kwargs must be a JSON object"):
        main(["play", "mrlm/Math-v0", "--kwargs", "[1]"])
    with pytest.raises(SystemExit, match="has no keyword argument 'levl'"):
        main(["play", "mrlm/Math-v0", "--kwargs", '{"levl": 1}'])
    with pytest.raises(SystemExit, match=r"^mrlm-envs: seed must be >= 0 .*, got -5$"):
        main(["play", "mrlm/Math-v0", "--seed", "-5"])
    with pytest.raises(SystemExit, match=r"^mrlm-envs: mrlm/Math-v0 has one agent: a seat \('pro'\) applies"):
        main(["play", "mrlm/Math-v0", "--agent", "pro"])
    with pytest.raises(SystemExit, match=r"has one agent: 'human' opponents apply"):
        main(["play", "mrlm/Math-v0", "--opponent", "human"])


def test_serve_on_an_address_of_no_interface_is_one_line() -> None:
    # 192.0.2.1 is reserved for documentation (RFC 5737): no interface has it, and binding to it
    # needs no name lookup and sends nothing.
    with pytest.raises(
        SystemExit,
        match=r"^mrlm-envs serve: cannot listen on 192\.0\.2\.1:0: not an address of this machine, or the port is in use$",
    ):
        main(["serve", "--host", "192.0.2.1", "--port", "0"])


def test_console_script_plays_through_a_pipe() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mrlm.envs.cli", "play", "mrlm/Math-v0", "--seed", "0"],
        input="\\boxed{0}\n.\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Episode over (terminated)" in result.stdout


def test_ctrl_c_while_playing_ends_in_one_line() -> None:
    """SIGINT while the command waits for the player's reply: status 130, as shells report it, and
    one line instead of a traceback."""
    command = [sys.executable, "-m", "mrlm.envs.cli", "play", "mrlm/Math-v0", "--seed", "0"]
    # As in a terminal's foreground, SIGINT must reach the command at its default: a suite started in
    # the background (`cmd &`) passes it on ignored, and Python then leaves it so. A small Python sets
    # it and execs the command; not a preexec_fn, which runs in the forked copy of this process,
    # where threads of libraries earlier tests started (gRPC's poller) come back to life and abort
    # when the fork closes their descriptors.
    start = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    player = subprocess.Popen(
        [sys.executable, "-c", start, *command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert player.stdout is not None
        shown = ""
        while "Your reply" not in shown:  # the prompt: it now reads its input
            line = player.stdout.readline()
            if not line:  # say why: its status and what it wrote to stderr
                _, error = player.communicate(timeout=60)
                raise AssertionError(
                    f"the command ended before asking for a reply (status {player.returncode}): {error[-2000:]}"
                )
            shown += line
        player.send_signal(signal.SIGINT)
        _, error = player.communicate(timeout=60)
    finally:
        player.kill()
    assert player.returncode == 130
    assert error.strip() == "mrlm-envs: interrupted"


def test_sandbox_command_reports_isolation(capsys: pytest.CaptureFixture[str]) -> None:
    main(["sandbox", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["separate_process"] is True and report["rlimits"] is True
    assert "separate_process" in report["active"]
    assert report["test_run"] == "ok"
    main(["sandbox"])
    assert "test run: ok" in capsys.readouterr().out


def test_play_on_a_server_that_is_not_there_is_one_line() -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(
        SystemExit,
        match=rf"^mrlm-envs play: ListEnvs on grpc://127\.0\.0\.1:{port} failed \(UNAVAILABLE\): .*is the server running",
    ):
        main(["play", f"grpc://127.0.0.1:{port}/mrlm/Math-v0", "--seed", "0"])


def test_a_list_into_a_reader_that_is_gone_ends_quietly() -> None:
    # As with `mrlm-envs list | head -1`: the read end is closed before the list is written.
    process = subprocess.Popen(
        [sys.executable, "-m", "mrlm.envs.cli", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    error = process.stderr.read().decode()
    assert process.wait(timeout=120) == 128 + signal.SIGPIPE
    assert "Traceback" not in error and "BrokenPipeError" not in error, error
