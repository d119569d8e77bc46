"""What a client may make the server do: each env's declared arguments, checked before anything is
built. Hostile keyword arguments get INVALID_ARGUMENT naming the argument, nothing is read from disk,
and the server keeps answering; local use keeps its full freedom."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

import mrlm.envs
from mrlm.envs.server import EnvServer, serve
from mrlm.envs.server.client_args import (
    Allowances,
    ArgumentRefused,
    ClientArgs,
    Float,
    Int,
    Limit,
    ListOf,
    Records,
    Scalar,
    Url,
)
from mrlm.proto.json_codec import encode_json
from mrlm.proto.v1 import env_pb2 as pb
from mrlm.proto.v1 import env_pb2_grpc
from tests.envs.remote.probe_env import PROBE_ID

#: Every built-in env: each has its own declaration.
BUILTIN = (
    "mrlm/Math-v0",
    "mrlm/Code-v0",
    "mrlm/ToolUse-v0",
    "mrlm/Debate-v0",
    "mrlm/CoopCode-v0",
    "mrlm/ClassCompletion-v0",
    "mrlm/Writing-v0",
    "mrlm/TeamSum-v0",
)
TIMEOUT_S = 10.0
#: A refusal must come back this fast: reading /dev/zero or a FIFO would take forever.
PROMPT_S = 3.0

SECRET = "assert candidate(2) == 'hidden-test-7f3a'"
HUMANEVAL = {
    "task_id": "Secret/0",
    "prompt": "def f(x):\n",
    "canonical_solution": "    return x\n",
    "test": f"def check(candidate):\n    {SECRET}\n",
    "entry_point": "f",
}


@pytest.fixture(scope="module")
def builtin_server() -> Iterator[EnvServer]:
    running = serve(envs=(*BUILTIN, PROBE_ID), host="127.0.0.1", port=0)
    try:
        yield running
    finally:
        running.stop(grace_s=0)


@pytest.fixture
def stub(builtin_server: EnvServer) -> Iterator[env_pb2_grpc.EnvServiceStub]:
    with grpc.insecure_channel(builtin_server.address) as channel:
        yield env_pb2_grpc.EnvServiceStub(channel)


def _open(stub: env_pb2_grpc.EnvServiceStub, env_id: str, kwargs: dict[str, Any] | str) -> str:
    text = kwargs if isinstance(kwargs, str) else encode_json(kwargs)
    reply = stub.OpenSession(pb.OpenSessionRequest(env_id=env_id, kwargs_json=text), timeout=TIMEOUT_S)
    return str(reply.session_id)


def _refused(stub: env_pb2_grpc.EnvServiceStub, env_id: str, kwargs: dict[str, Any] | str) -> tuple[str, str]:
    """The status name and details of an OpenSession that must fail, checked to come back promptly."""
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as raised:
        _open(stub, env_id, kwargs)
    assert time.monotonic() - started < PROMPT_S
    return raised.value.code().name, raised.value.details()


def _answers_health(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


HOSTILE = [
    ("mrlm/Math-v0", {"records": "/dev/zero"}, "records"),
    ("mrlm/Code-v0", {"records": "/dev/zero"}, "records"),
    ("mrlm/ClassCompletion-v0", {"records": "/dev/zero"}, "records"),
    ("mrlm/ToolUse-v0", {"documents": "/dev/zero"}, "documents"),
    ("mrlm/Debate-v0", {"rounds": 10**9}, "rounds"),
    ("mrlm/Debate-v0", {"debaters_per_side": 10**9}, "debaters_per_side"),
    ("mrlm/CoopCode-v0", {"num_agents": 10**9}, "num_agents"),
    ("mrlm/ClassCompletion-v0", {"num_agents": 10**9}, "num_agents"),
    ("mrlm/Code-v0", {"memory_limit_mb": 3072}, "memory_limit_mb"),
    ("mrlm/Code-v0", {"time_limit_s": 1e9}, "time_limit_s"),
    ("mrlm/CoopCode-v0", {"test_time_limit_s": 60}, "test_time_limit_s"),
    ("mrlm/Math-v0", {"verify_timeout": 1e9}, "verify_timeout"),
    ("mrlm/Debate-v0", {"judge": "http://10.0.0.1/v1"}, "judge"),
    ("mrlm/Writing-v0", {"reward_fn": "os:system"}, "reward_fn"),
    ("mrlm/Code-v0", {"sandbox": {}}, "sandbox"),
    ("mrlm/ToolUse-v0", {"python_limits": {"wall_time_s": 1e9}}, "python_limits"),
    ("mrlm/Writing-v0", {"records": "/etc/passwd"}, "records"),
    ("mrlm/Math-v0", {"topics": ["algebra"] * 100_000}, "topics"),
    ("mrlm/TeamSum-v0", {"num_agents": 10**9}, "num_agents"),
    ("mrlm/TeamSum-v0", {"operations": ["**"]}, "operations"),
]


@pytest.mark.parametrize(("env_id", "kwargs", "argument"), HOSTILE, ids=[f"{e}-{a}" for e, _, a in HOSTILE])
def test_hostile_kwargs_are_invalid_argument_naming_the_argument(
    stub: env_pb2_grpc.EnvServiceStub,
    builtin_server: EnvServer,
    env_id: str,
    kwargs: dict[str, Any],
    argument: str,
) -> None:
    code, details = _refused(stub, env_id, kwargs)
    assert code == "INVALID_ARGUMENT" and f"argument {argument!r}" in details and env_id in details
    assert len(builtin_server.store) == 0
    _answers_health(builtin_server.address)


def test_the_refusal_says_what_is_allowed(stub: env_pb2_grpc.EnvServiceStub) -> None:
    _, details = _refused(stub, "mrlm/Debate-v0", {"rounds": 10**9})
    assert "must be an int in [2, 16], got 1000000000" in details
    code, details = _refused(stub, "mrlm/Debate-v0", {"rounds": 1})  # a debate opens and closes
    assert code == "INVALID_ARGUMENT" and "argument 'rounds' must be an int in [2, 16], got 1" in details
    _, details = _refused(stub, "mrlm/Code-v0", {"memory_limit_mb": 3072})
    assert "in [16, 512]" in details and "lower, never raise" in details
    _, details = _refused(stub, "mrlm/Debate-v0", {"judge": "http://10.0.0.1/v1"})
    assert "cannot be set by a client" in details and "rounds" in details  # the settable ones are listed
    _, details = _refused(stub, "mrlm/Math-v0", {"records": "/dev/zero"})
    assert "accepts none from clients" in details and "--allow-records-dir" in details


def test_limits_can_be_lowered_and_allowed_values_open_sessions(
    stub: env_pb2_grpc.EnvServiceStub, builtin_server: EnvServer
) -> None:
    opened = [
        _open(stub, "mrlm/Code-v0", {"memory_limit_mb": 256, "time_limit_s": 5, "max_turns": 2}),
        _open(stub, "mrlm/Debate-v0", {"rounds": 2, "debaters_per_side": 2, "reward_mode": "scores"}),
        _open(stub, "mrlm/Math-v0", {"level": 2, "topics": "algebra", "verify_timeout": 1.5}),
        _open(stub, "mrlm/Writing-v0", {"task": "tldr", "length_bands": {"summary": [5, 40]}}),
        _open(stub, "mrlm/TeamSum-v0", {"num_agents": 4, "high": 99, "operations": ["+", "-"]}),
    ]
    assert len(builtin_server.store) == len(opened)
    for session_id in opened:
        stub.CloseSession(pb.CloseSessionRequest(session_id=session_id), timeout=TIMEOUT_S)
    assert len(builtin_server.store) == 0


#: Bounds that hold only together with another argument, which is given alongside.
INT_BOUND_COMPANIONS: dict[tuple[str, str, int], dict[str, Any]] = {
    ("mrlm/TeamSum-v0", "low", 99): {"high": 99},
    ("mrlm/TeamSum-v0", "high", 0): {"low": 0},
}
#: Bounds the env accepts only with records that allow them (the built-in problems have 2 or 3 parts).
INT_BOUNDS_NEEDING_RECORDS = {("mrlm/CoopCode-v0", "num_agents", 8)}


def _declared(env_id: str) -> ClientArgs:
    declared = mrlm.envs.env_entry(env_id).client_args
    assert declared is not None, env_id
    return declared


INT_BOUNDS = [
    (env_id, name, value)
    for env_id in BUILTIN
    for name, kind in _declared(env_id).args.items()
    if isinstance(kind, Int)
    for value in (kind.low, kind.high)
    if (env_id, name, value) not in INT_BOUNDS_NEEDING_RECORDS
]


@pytest.mark.parametrize(
    ("env_id", "name", "value"), INT_BOUNDS, ids=[f"{e}-{n}={v}" for e, n, v in INT_BOUNDS]
)
def test_every_declared_int_bound_builds_the_env(env_id: str, name: str, value: int) -> None:
    # A value the declaration lets through must not be refused by the env itself.
    kwargs = {name: value, **INT_BOUND_COMPANIONS.get((env_id, name, value), {})}
    mrlm.envs.make(env_id, **kwargs).close()


def test_paths_reveal_nothing_of_the_server_s_files(
    stub: env_pb2_grpc.EnvServiceStub, tmp_path: Path
) -> None:
    secret = tmp_path / "humaneval.jsonl"
    secret.write_text(encode_json(HUMANEVAL) + "\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it would pin the server's thread until someone writes
    missing = tmp_path / "missing.jsonl"
    answers = {}
    for path in (secret, fifo, missing):
        code, details = _refused(stub, "mrlm/Code-v0", {"records": str(path)})
        assert code == "INVALID_ARGUMENT" and "argument 'records'" in details
        answers[path] = details
    assert len(set(answers.values())) == 1  # the same answer whether the file exists, is a FIFO or not
    assert "hidden-test" not in answers[secret]


def test_oversized_kwargs_are_refused_before_decoding(stub: env_pb2_grpc.EnvServiceStub) -> None:
    records = [{"problem": "x" * 1000, "answer": "1"} for _ in range(2000)]  # about 2 MB inline
    code, details = _refused(stub, "mrlm/Math-v0", {"records": records})
    assert code == "INVALID_ARGUMENT" and "--max-kwargs-bytes" in details and "kwargs_json" in details


def test_inline_data_is_capped_in_total() -> None:
    records = [{"problem": f"What is {n} + 1?", "answer": str(n + 1)} for n in range(20)]
    size = len(encode_json({"records": records}).encode())
    with (
        serve(envs=("mrlm/Math-v0",), port=0, max_kwargs_bytes_total=2 * size + 10) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        stub = env_pb2_grpc.EnvServiceStub(channel)
        first, _ = (
            _open(stub, "mrlm/Math-v0", {"records": records}),
            _open(stub, "mrlm/Math-v0", {"records": records}),
        )
        code, details = _refused(stub, "mrlm/Math-v0", {"records": records})
        assert code == "RESOURCE_EXHAUSTED" and "--max-kwargs-bytes-total" in details
        assert server.store.kwargs_bytes == 2 * size
        stub.CloseSession(pb.CloseSessionRequest(session_id=first), timeout=TIMEOUT_S)
        _open(stub, "mrlm/Math-v0", {"records": records})  # closing one made room
        _answers_health(server.address)


def test_an_allowed_directory_serves_regular_files_inside_it_only(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    record = encode_json({"problem": "What is 40 + 2?", "answer": "42"}) + "\n"
    (allowed / "math.jsonl").write_text(record)
    (outside / "math.jsonl").write_text(record)
    (allowed / "escape.jsonl").symlink_to(outside / "math.jsonl")
    os.mkfifo(allowed / "fifo")
    with (
        serve(envs=("mrlm/Math-v0",), port=0, allow_records_dir=(str(allowed),)) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        stub = env_pb2_grpc.EnvServiceStub(channel)
        for path in (str(allowed / "math.jsonl"), "math.jsonl"):  # relative to the allowed directory
            session = _open(stub, "mrlm/Math-v0", {"records": path})
            state = stub.Reset(pb.ResetRequest(session_id=session, seed=0), timeout=TIMEOUT_S).state
            assert "40 + 2" in state.agents[0].observation.text
        for path, why in [
            (str(outside / "math.jsonl"), "outside the directories"),
            ("../outside/math.jsonl", "outside the directories"),
            (str(allowed / "escape.jsonl"), "outside the directories"),
            (str(allowed / "fifo"), "not a regular file"),
            ("/dev/zero", "outside the directories"),
        ]:
            code, details = _refused(stub, "mrlm/Math-v0", {"records": path})
            assert code == "INVALID_ARGUMENT" and "argument 'records'" in details and why in details, path
        _answers_health(server.address)


def test_envs_without_a_declaration_take_small_scalars_only(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvServiceStub(channel)
        session = _open(stub, "mrlm-test/GuessWord-v0", {"rounds": 2})  # registered without one
        stub.CloseSession(pb.CloseSessionRequest(session_id=session), timeout=TIMEOUT_S)
        for value in ("/etc/passwd", "words.txt", "http://example.org", 10**9, [1], {"a": 1}):
            code, details = _refused(stub, "mrlm-test/GuessWord-v0", {"rounds": value})
            assert code == "INVALID_ARGUMENT" and "argument 'rounds'" in details


def test_local_use_keeps_its_full_freedom(tmp_path: Path) -> None:
    records = tmp_path / "math.jsonl"
    records.write_text(encode_json({"problem": "What is 1 + 1?", "answer": "2"}) + "\n")
    env = mrlm.envs.make("mrlm/Math-v0", records=str(records), max_turns=100, verify_timeout=60.0)
    observation, _ = env.reset(seed=0)
    assert "1 + 1" in observation
    env.close()


def test_the_kinds_check_values_and_types() -> None:
    where = Allowances()
    declared = ClientArgs(
        {
            "n": Int(1, 3),
            "x": Float(0.0, 1.0, optional=True),
            "cap": Limit(1),
            "names": ListOf(Int(0, 9), max_items=2),
            "data": Records(max_items=1),
            "url": Url(),
        },
        others=Scalar(),
    )
    defaults = {"cap": 10}
    assert declared.check(
        {"n": 2, "x": None, "cap": 10, "names": [1]}, defaults=defaults, allowances=where
    ) == {
        "n": 2,
        "x": None,
        "cap": 10,
        "names": [1],
    }
    hostile: list[dict[str, Any]] = [
        {"n": True},  # a bool is not an int
        {"n": 2.0},
        {"x": float("inf")},
        {"x": 10**400},  # an int too large for a float is refused, not an OverflowError
        {"cap": 10**400},
        {"cap": 11},
        {"cap": 2.5},  # the default is an int
        {"names": [1, 2, 3]},
        {"names": ["a"]},
        {"data": [{"a": 1}, {"b": 2}]},
        {"data": [1]},
        {"url": "http://example.org/x"},  # no host is allowed
        {"other": "../x"},
        {"other": 1e9},
    ]
    for kwargs in hostile:
        with pytest.raises(ArgumentRefused, match=f"argument {next(iter(kwargs))!r}"):
            declared.check(kwargs, defaults=defaults, allowances=where)
    allowed = Allowances.of(url_hosts=["judge.internal"])
    url = "https://judge.internal/v1"
    assert declared.check({"url": url}, defaults=defaults, allowances=allowed) == {"url": url}
