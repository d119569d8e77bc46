"""collect_info / format_info: what they report and how they cope with a missing env registry."""

from __future__ import annotations

import json
import os
import platform
from importlib import metadata
from types import SimpleNamespace
from typing import Any

import pytest
import torch

import mrlm.envs
from mrlm.train.algorithms import available_algorithms
from mrlm.train.info import (
    ENVS_UNAVAILABLE,
    LIBRARY_DISTRIBUTIONS,
    MRLM_DISTRIBUTIONS,
    collect_envs,
    collect_info,
    distribution_version,
    format_info,
)


@pytest.fixture(scope="module")
def info() -> dict[str, Any]:
    return collect_info()


def test_top_level_keys(info: dict[str, Any]) -> None:
    assert set(info) == {"mrlm", "python", "platform", "libraries", "devices", "envs", "algorithms"}
    json.dumps(info)  # plain data only


def test_versions_match_installed_metadata(info: dict[str, Any]) -> None:
    assert set(info["mrlm"]) == set(MRLM_DISTRIBUTIONS)
    assert set(info["libraries"]) == set(LIBRARY_DISTRIBUTIONS)
    for name, version in {**info["mrlm"], **info["libraries"]}.items():
        assert version == metadata.version(name), name
    assert info["python"]["version"] == platform.python_version()
    assert isinstance(info["platform"], str)


def test_missing_distribution_has_no_version() -> None:
    assert distribution_version("mrlm-no-such-distribution") is None


def test_devices(info: dict[str, Any]) -> None:
    devices = info["devices"]
    assert devices["cpu_count"] == os.cpu_count()
    assert devices["cuda_available"] is torch.cuda.is_available()
    assert isinstance(devices["mps_available"], bool)
    assert len(devices["cuda_devices"]) == (torch.cuda.device_count() if devices["cuda_available"] else 0)
    for device in devices["cuda_devices"]:
        assert isinstance(device["name"], str)
        assert isinstance(device["bf16"], bool)


def test_envs_and_algorithms(info: dict[str, Any]) -> None:
    assert info["algorithms"] == list(available_algorithms())
    assert all(isinstance(name, str) for name in info["algorithms"])
    envs = info["envs"]
    assert envs["error"] is None or isinstance(envs["error"], str)
    for entry in envs["entries"]:
        assert set(entry) == {"id", "kinds", "description"}
        assert isinstance(entry["id"], str)
        assert all(isinstance(kind, str) for kind in entry["kinds"])


def test_envs_fallback_when_list_envs_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(mrlm.envs, "list_envs", raising=False)
    assert collect_envs() == {"entries": [], "error": ENVS_UNAVAILABLE}


def test_envs_failure_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> list[object]:
        raise RuntimeError("registry exploded")

    monkeypatch.setattr(mrlm.envs, "list_envs", broken, raising=False)
    envs = collect_envs()
    assert envs["entries"] == []
    assert "RuntimeError: registry exploded" in envs["error"]


def test_envs_entries_from_objects_and_mappings(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [
        SimpleNamespace(id="mrlm/A-v0", kinds=("gymnasium",), description="a"),
        {"id": "mrlm/B-v0", "kinds": ("aec", "parallel"), "description": "b"},
    ]
    monkeypatch.setattr(mrlm.envs, "list_envs", lambda: entries, raising=False)
    assert collect_envs()["entries"] == [
        {"id": "mrlm/A-v0", "kinds": ["gymnasium"], "description": "a"},
        {"id": "mrlm/B-v0", "kinds": ["aec", "parallel"], "description": "b"},
    ]


def _fake_info(**overrides: Any) -> dict[str, Any]:
    info: dict[str, Any] = {
        "mrlm": {"mrlm-train": "0.1.0", "mrlm-envs": None},
        "python": {"version": "3.11.0", "implementation": "CPython", "executable": "/bin/python"},
        "platform": "Linux-x86_64",
        "libraries": {"torch": "2.5.0"},
        "devices": {
            "cpu_count": 8,
            "cuda_available": True,
            "cuda_devices": [
                {"index": 0, "name": "NVIDIA H100", "capability": "9.0", "memory_gib": 79.1, "bf16": True}
            ],
            "mps_available": False,
        },
        "envs": {
            "entries": [{"id": "mrlm/Math-v0", "kinds": ["gymnasium"], "description": "math"}],
            "error": None,
        },
        "algorithms": [],
    }
    info.update(overrides)
    return info


def test_format_info_renders_every_section() -> None:
    text = format_info(_fake_info())
    assert "mrlm-train            0.1.0" in text
    assert "mrlm-envs             not installed" in text
    assert "3.11.0 (CPython) /bin/python" in text
    assert "cuda:0" in text and "NVIDIA H100 (sm 9.0, 79.1 GiB, bf16)" in text
    assert "mrlm/Math-v0" in text and "[gymnasium] math" in text
    assert text.splitlines()[-1] == "algorithms              none yet"


def test_format_info_reports_env_errors_and_algorithms() -> None:
    text = format_info(_fake_info(envs={"entries": [], "error": ENVS_UNAVAILABLE}, algorithms=["x", "y"]))
    assert ENVS_UNAVAILABLE in text
    assert text.splitlines()[-1].endswith("x, y")


def test_format_info_of_this_installation(info: dict[str, Any]) -> None:
    text = format_info(info)
    for name in (*MRLM_DISTRIBUTIONS, *LIBRARY_DISTRIBUTIONS):
        assert f"  {name:<22}{metadata.version(name)}" in text
    expected = "none yet" if not info["algorithms"] else ", ".join(info["algorithms"])
    assert text.splitlines()[-1] == f"{'algorithms':<24}{expected}"
