"""Registration where users look for ids, and one ``make`` with clear errors."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import gymnasium
import pettingzoo
import pytest

import mrlm.envs
from mrlm.envs import EnvArgumentError, EnvEntry, UnknownEnvError, env_entry, make, register_env
from mrlm.envs.registry import register_scheme
from tests.envs.toy_games import GuessNumberParallel, GuessWordAEC, aec_env


def test_gymnasium_make_finds_the_math_env() -> None:
    env = gymnasium.make("mrlm/Math-v0", level=2)
    observation, _ = env.reset(seed=0)
    assert isinstance(observation, str) and observation.startswith("What is")


def test_pettingzoo_make_finds_multi_agent_ids() -> None:
    assert isinstance(pettingzoo.make("aec", "mrlm-test/GuessWord-v0").unwrapped, GuessWordAEC)
    assert isinstance(pettingzoo.make("parallel", "mrlm-test/GuessNumber-v0"), GuessNumberParallel)


def test_our_make_builds_both_kinds() -> None:
    assert isinstance(make("mrlm/Math-v0"), gymnasium.Env)
    assert isinstance(make("mrlm-test/GuessNumber-v0"), GuessNumberParallel)
    env = make("mrlm-test/GuessNumber-v0", rounds=3)
    assert env.rounds == 3


def test_unknown_id_names_the_known_ids_and_a_close_match() -> None:
    with pytest.raises(UnknownEnvError) as caught:
        make("mrlm/Maths-v0")
    message = str(caught.value)
    assert "unknown env id 'mrlm/Maths-v0'" in message
    assert "Did you mean 'mrlm/Math-v0'" in message
    assert "Known ids:" in message and "mrlm-test/GuessWord-v0" in message


def test_an_id_of_an_unknown_scheme_names_the_known_schemes() -> None:
    with pytest.raises(UnknownEnvError) as caught:
        make("GRPC://127.0.0.1:1/mrlm/Math-v0")
    assert str(caught.value).startswith(  # other tests may register schemes of their own
        "unknown scheme 'GRPC' in env id 'GRPC://127.0.0.1:1/mrlm/Math-v0'. "
        "Did you mean 'grpc://127.0.0.1:1/mrlm/Math-v0'? Known schemes: grpc, grpcs"
    )
    with pytest.raises(
        UnknownEnvError, match=r"^unknown scheme 'ftp' in env id 'ftp://a/b'\. Known schemes: grpc, grpcs"
    ):
        env_entry("ftp://a/b")


def test_bad_keyword_names_the_argument_and_what_is_accepted() -> None:
    with pytest.raises(EnvArgumentError) as caught:
        make("mrlm/Math-v0", levle=3)
    message = str(caught.value)
    assert "'levle'" in message and "did you mean 'level'" in message and "max_turns" in message


def test_bad_keyword_value_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="level must be one of"):
        make("mrlm/Math-v0", level=9)


def test_kind_not_offered() -> None:
    with pytest.raises(EnvArgumentError, match="offered as gymnasium, not 'aec'"):
        make("mrlm/Math-v0", kind="aec")
    with pytest.raises(EnvArgumentError, match="unknown kind"):
        make("mrlm/Math-v0", kind="vector")  # type: ignore[arg-type]


def test_list_envs_entries() -> None:
    entries = {entry.id: entry for entry in mrlm.envs.list_envs()}
    assert entries["mrlm/Math-v0"].kinds == ("gymnasium",)
    assert not entries["mrlm/Math-v0"].multi_agent
    assert entries["mrlm-test/GuessWord-v0"].kinds == ("aec",)
    assert entries["mrlm-test/GuessWord-v0"].multi_agent
    assert all(entry.description for entry in entries.values())


def test_register_env_validates() -> None:
    with pytest.raises(ValueError, match="at least one entry point"):
        register_env("mrlm-test/Nothing-v0", description="x")
    with pytest.raises(ValueError, match="either single-agent"):
        register_env(
            "mrlm-test/Both-v0",
            description="x",
            gymnasium_entry_point="a:b",
            aec_entry_point="a:c",
        )
    with pytest.raises(ValueError, match="default_kind"):
        register_env("mrlm-test/Kind-v0", description="x", aec_entry_point="a:b", default_kind="parallel")


def test_default_kind_orders_kinds() -> None:
    entry = register_env(
        "mrlm-test/TwoKinds-v0",
        description="both APIs",
        aec_entry_point="tests.envs.toy_games:aec_env",
        parallel_entry_point="tests.envs.toy_games:parallel_env",
        default_kind="parallel",
    )
    assert entry.kinds == ("parallel", "aec")
    assert isinstance(make("mrlm-test/TwoKinds-v0"), GuessNumberParallel)
    assert isinstance(make("mrlm-test/TwoKinds-v0", kind="aec").unwrapped, GuessWordAEC)


def _run_python(code: str) -> str:
    """``code`` in a fresh interpreter (imports start from nothing); its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_registry_imports_nothing_of_the_remote_package() -> None:
    code = (
        "import sys\n"
        "import mrlm.envs.registry\n"
        "print(sorted(m for m in sys.modules if m.startswith(('mrlm.envs.remote', 'grpc'))))\n"
    )
    assert _run_python(code).strip() == "[]"


def test_a_grpc_id_imports_the_remote_package_which_registers_its_schemes() -> None:
    code = (
        "import sys\n"
        "import mrlm.envs\n"
        "from mrlm.envs import registry\n"
        "assert 'mrlm.envs.remote' not in sys.modules\n"
        "from mrlm.envs.server import serve\n"
        "with serve(envs=('mrlm/Math-v0',), host='127.0.0.1', port=0) as server:\n"
        "    remote_id = f'grpc://127.0.0.1:{server.port}/mrlm/Math-v0'\n"
        "    entry = mrlm.envs.env_entry(remote_id)\n"
        "    env = mrlm.envs.make(remote_id, level=1)\n"
        "    observation, _ = env.reset(seed=0)\n"
        "    local, _ = mrlm.envs.make('mrlm/Math-v0', level=1).reset(seed=0)\n"
        "    env.close()\n"
        "print(entry.kinds, type(env).__name__, observation == local, sorted(registry._SCHEMES))\n"
    )
    assert _run_python(code).split() == ["('gymnasium',)", "RemoteEnv", "True", "['grpc',", "'grpcs']"]


def test_the_first_grpc_id_imports_the_remote_package_itself() -> None:
    # No server listens on the discard port: the id still reaches the remote client, which says so.
    code = (
        "import sys\n"
        "import mrlm.envs\n"
        "assert 'mrlm.envs.remote' not in sys.modules\n"
        "try:\n"
        "    mrlm.envs.make('grpc://127.0.0.1:9/mrlm/Math-v0')\n"
        "except mrlm.envs.remote.ServerUnavailableError:\n"
        "    print('unavailable')\n"
    )
    assert _run_python(code).strip() == "unavailable"


def test_register_scheme_sends_ids_to_their_handlers() -> None:
    made: list[tuple[str, Any]] = []

    def make_toy(id: str, **kwargs: Any) -> str:
        made.append((id, kwargs))
        return "env"

    entry = EnvEntry(id="toy://x", kinds=("aec",), description="toy", entry_points={"aec": aec_env})
    register_scheme("toy", make=make_toy, entry=lambda id: entry)
    assert make("toy://x", kind="aec", rounds=2) == "env"
    assert made == [("toy://x", {"kind": "aec", "rounds": 2})]
    assert mrlm.envs.env_entry("toy://x") is entry
    with pytest.raises(
        UnknownEnvError, match=r"unknown scheme 'nope' in env id 'nope://x'\. Known schemes: .*\btoy\b"
    ):
        make("nope://x")
    with pytest.raises(ValueError, match="a scheme is a name"):
        register_scheme("to y", make=make, entry=mrlm.envs.env_entry)
