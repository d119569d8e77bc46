"""Access rules: the shared token on every call (health excepted), TLS, settings from the environment.

``tls/server.crt`` and ``tls/server.key`` are a self-signed test certificate for localhost and
127.0.0.1, made for these tests only (``openssl req -x509 -newkey rsa:2048 -nodes -days 36500``);
``tls/other.key`` is a key of no certificate, ``tls/encrypted.key`` a key under a passphrase
(``openssl genpkey -algorithm EC``, the second with ``-aes256``).
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

import mrlm.envs
from mrlm.envs.cli import main
from mrlm.envs.remote import Connection, RemoteAuthError, RemoteEnv, ServerUnavailableError
from mrlm.envs.server import ServerConfig, serve
from mrlm.proto.v1 import env_pb2 as pb
from mrlm.proto.v1 import env_pb2_grpc
from tests.envs.remote.probe_env import PROBE_ID

TLS = Path(__file__).resolve().parent / "tls"
TOKEN = "s3cret-token"


def test_calls_need_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MRLM_ENVS_TOKEN", raising=False)
    with serve(envs=(PROBE_ID,), port=0, token=TOKEN) as server:
        for token in (None, "wrong", f"{TOKEN}x"):
            with (
                Connection(server.address, token=token) as connection,
                pytest.raises(RemoteAuthError, match="missing or wrong token") as raised,
            ):
                RemoteEnv(connection, PROBE_ID)
            assert raised.value.code == "UNAUTHENTICATED" and server.address in str(raised.value)
        with Connection(server.address, token=TOKEN) as connection, RemoteEnv(connection, PROBE_ID) as env:
            env.reset(seed=0)
            assert env.step("in")[0] == "echo in"

        monkeypatch.setenv("MRLM_ENVS_TOKEN", TOKEN)  # what make() and plain addresses use
        env = mrlm.envs.make(f"grpc://{server.address}/{PROBE_ID}")
        assert env.reset(seed=0)[0].startswith("probe ")
        env.close()
        assert len(server.store) == 0


def test_health_is_open_but_streams_and_reflection_need_the_token() -> None:
    with (
        serve(envs=(PROBE_ID,), port=0, token=TOKEN) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stream = env_pb2_grpc.EnvServiceStub(channel).StepStream(iter([pb.BatchRequest()]), timeout=10)
        with pytest.raises(grpc.RpcError) as raised:
            list(stream)
        assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        with pytest.raises(grpc.RpcError) as raised:
            list(
                reflection.ServerReflectionInfo(
                    iter([reflection_pb2.ServerReflectionRequest(list_services="")])
                )
            )
        assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_tls_with_token() -> None:
    with serve(
        envs=(PROBE_ID,),
        port=0,
        token=TOKEN,
        tls_cert=str(TLS / "server.crt"),
        tls_key=str(TLS / "server.key"),
    ) as server:
        secure = f"grpcs://{server.address}"
        with (
            Connection(secure, token=TOKEN, root_certificates=TLS / "server.crt") as connection,
            RemoteEnv(connection, PROBE_ID) as env,
        ):
            env.reset(seed=0)
            assert env.step("sealed")[0] == "echo sealed"
        with (
            Connection(server.address, token=TOKEN, retries=0) as plaintext,
            pytest.raises(ServerUnavailableError),
        ):
            RemoteEnv(plaintext, PROBE_ID)  # plaintext against TLS: no connection
        with (
            Connection(secure, token=TOKEN, retries=0) as unknown_root,
            pytest.raises(ServerUnavailableError),
        ):
            RemoteEnv(unknown_root, PROBE_ID)  # the system roots do not trust the test certificate


def test_server_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MRLM_ENVS_TOKEN", "from-env")
    monkeypatch.setenv("MRLM_ENVS_TLS_CERT", str(TLS / "server.crt"))
    monkeypatch.setenv("MRLM_ENVS_TLS_KEY", str(TLS / "server.key"))
    config = ServerConfig(envs=("mrlm/Math-v0,mrlm/Code-v0", "mrlm/ToolUse-v0")).with_environment()
    assert config.envs == ("mrlm/Math-v0", "mrlm/Code-v0", "mrlm/ToolUse-v0")
    assert (config.token, config.tls_cert, config.tls_key) == (
        "from-env",
        str(TLS / "server.crt"),
        str(TLS / "server.key"),
    )
    assert ServerConfig(token="flag").with_environment().token == "flag"  # a flag wins
    with pytest.raises(ValueError, match="TLS needs both"):
        ServerConfig(tls_cert="cert.pem")


@pytest.mark.parametrize(
    ("cert", "key", "reason"),
    [
        (
            "server.crt",
            "other.key",
            r"--tls-cert '.*server\.crt' and --tls-key '.*other\.key': the key does not belong to the certificate",
        ),
        (
            "server.crt",
            "encrypted.key",
            r"--tls-key '.*encrypted\.key' is encrypted: the server needs the key without a passphrase",
        ),
        ("server.crt", "server.crt", r"--tls-key '.*server\.crt' is not a PEM private key"),
        ("server.key", "server.key", r"--tls-cert '.*server\.key' is not a PEM certificate chain"),
        ("server.crt", "missing.key", r"--tls-key '.*missing\.key': No such file or directory"),
        # read whole, /dev/zero never ended
        ("/dev/zero", "server.key", r"--tls-cert '/dev/zero' is not a regular file"),
    ],
)
@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_bad_tls_pair_is_named_before_the_server_starts(
    cert: str, key: str, reason: str, processes: str
) -> None:
    # gRPC itself only logs "Unable to create secure server" and fails to bind, which read as a port in use.
    command = ["serve", "--envs", PROBE_ID, "--port", "0", "--processes", processes]
    with pytest.raises(SystemExit, match=rf"^mrlm-envs serve: {reason}$"):
        main([*command, "--tls-cert", str(TLS / cert), "--tls-key", str(TLS / key)])
