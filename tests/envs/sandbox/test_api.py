"""The sandbox's public types and argument checks: clear errors for bad input."""

from __future__ import annotations

import pytest

from mrlm.envs.sandbox import IsolationReport, Limits, Sandbox, Status
from mrlm.envs.sandbox.api import LAYERS
from mrlm.envs.sandbox.request import build_request


@pytest.mark.parametrize(
    "changes",
    [
        {"wall_time_s": 0},
        {"wall_time_s": -1.0},
        {"wall_time_s": float("nan")},
        {"cpu_time_s": float("inf")},
        {"memory_bytes": 0},
        {"memory_bytes": 1.5},
        {"output_bytes": -1},
        {"file_size_bytes": 0},
        {"processes": 0},
        {"open_files": 3},
        {"scratch_bytes": 0},
        {"allow_exec": "yes"},
        {"processes": True},
        # Beyond what timers, rlimits, cgroups and tmpfs take: refused here, not in the worker.
        {"wall_time_s": 1e300},
        {"cpu_time_s": 86_400.5},
        {"memory_bytes": 2**70},
        {"output_bytes": 2**51},
        {"file_size_bytes": 2**70},
        {"scratch_bytes": 2**70},
        {"processes": 2**40},
        {"open_files": 2**40},
    ],
    ids=repr,
)
def test_bad_limits_raise_value_error(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="Limits"):
        Limits(**changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name", ["", "/etc/passwd", "../escape.py", "a/../../b", "./main.py", "a//b", "dir/", "x\0y", "main.py"]
)
def test_file_names_must_stay_in_scratch(name: str) -> None:
    with pytest.raises(ValueError, match="file name"):
        build_request("pass", "", {name: "x"}, Limits())


def test_file_names_may_have_directories() -> None:
    request = build_request("pass", "", {"pkg/module.py": "x = 1"}, Limits())
    assert request["files"] == {"pkg/module.py": "x = 1"}


def test_bad_types_raise_type_error() -> None:
    with pytest.raises(TypeError, match="source"):
        build_request(b"print(1)", "", None, Limits())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="stdin"):
        build_request("pass", None, None, Limits())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="content"):
        build_request("pass", "", {"a.txt": b"x"}, Limits())  # type: ignore[dict-item]


@pytest.mark.parametrize("where", ["source", "stdin", "file"])
def test_text_that_utf8_cannot_hold_raises_value_error(where: str) -> None:
    texts = {"source": "pass", "stdin": "", "file": "x"} | {where: "bad \ud800"}
    with pytest.raises(ValueError, match="lone surrogate"):
        build_request(texts["source"], texts["stdin"], {"a.txt": texts["file"]}, Limits())


def test_files_larger_than_the_scratch_raise_value_error() -> None:
    with pytest.raises(ValueError, match="scratch_bytes"):
        build_request("pass", "", {"big.txt": "x" * 2048}, Limits(scratch_bytes=1024))


def test_bad_sandbox_arguments_raise_value_error() -> None:
    with pytest.raises(ValueError, match="require"):
        Sandbox(require="maximum")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot disable"):
        Sandbox(disable=["separate_process"])
    with pytest.raises(ValueError, match="workers"):
        Sandbox(workers=0)


def test_isolation_report_lists_layers() -> None:
    report = IsolationReport(
        separate_process=True,
        rlimits=True,
        user_namespace=True,
        network_namespace=False,
        pid_namespace=True,
        seccomp=False,
    )
    assert report.active() == ("separate_process", "rlimits", "user_namespace", "pid_namespace")
    assert report.missing("none") == ()
    assert report.missing("namespaces") == ("network_namespace", "mount_namespace")
    assert set(report.missing("strongest")) == set(LAYERS) - set(report.active())


def test_status_values_are_stable() -> None:
    assert [status.value for status in Status] == [
        "ok",
        "error",
        "timeout",
        "memory",
        "output_limit",
        "killed",
        "sandbox_error",
    ]
