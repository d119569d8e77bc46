"""Describe the installation: package versions, devices, environments and algorithms.

``collect_info()`` returns plain JSON-serialisable data; ``format_info()`` renders it for people.
Collecting never raises for a missing optional piece: a distribution that is not installed has
version ``None`` and a failing environment listing is reported in ``envs["error"]``.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any

from mrlm.train.algorithms import available_algorithms

MRLM_DISTRIBUTIONS: tuple[str, ...] = ("mrlm-proto", "mrlm-envs", "mrlm-train")
LIBRARY_DISTRIBUTIONS: tuple[str, ...] = (
    "torch",
    "transformers",
    "accelerate",
    "tokenizers",
    "gymnasium",
    "pettingzoo",
)
ENVS_UNAVAILABLE = "mrlm.envs.list_envs unavailable"


def collect_info() -> dict[str, Any]:
    """Collect a description of this installation.

    Returns a dict with keys:

    * ``mrlm`` and ``libraries``: ``{distribution name: version or None}``, read from the installed
      distribution metadata;
    * ``python``: ``{"version", "implementation", "executable"}``;
    * ``platform``: ``platform.platform()``;
    * ``devices``: ``{"cpu_count", "cuda_available", "cuda_devices", "mps_available"}`` where each
      CUDA device is ``{"index", "name", "capability", "memory_gib", "bf16"}``;
    * ``envs``: ``{"entries": [{"id", "kinds", "description"}], "error": str | None}`` from
      ``mrlm.envs.list_envs()``;
    * ``algorithms``: names of the training algorithms that exist in ``mrlm.train``.
    """
    return {
        "mrlm": {name: distribution_version(name) for name in MRLM_DISTRIBUTIONS},
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "platform": platform.platform(),
        "libraries": {name: distribution_version(name) for name in LIBRARY_DISTRIBUTIONS},
        "devices": collect_devices(),
        "envs": collect_envs(),
        "algorithms": list(available_algorithms()),
    }


def distribution_version(name: str) -> str | None:
    """Installed version of distribution ``name``, or ``None`` if it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def collect_devices() -> dict[str, Any]:
    """CPU count and the accelerators torch can see.

    ``bf16`` means native bfloat16 support, taken as CUDA compute capability 8.0 or newer.
    """
    import torch  # imported here so that importing this module stays cheap

    cuda_devices: list[dict[str, Any]] = []
    cuda_available = torch.cuda.is_available()
    if cuda_available:
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            cuda_devices.append(
                {
                    "index": index,
                    "name": props.name,
                    "capability": f"{props.major}.{props.minor}",
                    "memory_gib": round(props.total_memory / 2**30, 1),
                    "bf16": props.major >= 8,
                }
            )
    return {
        "cpu_count": os.cpu_count(),
        "cuda_available": cuda_available,
        "cuda_devices": cuda_devices,
        "mps_available": bool(torch.backends.mps.is_available()),
    }


def collect_envs() -> dict[str, Any]:
    """Registered environments from ``mrlm.envs.list_envs()``.

    Each entry may be an object or a mapping with ``id``, ``kinds`` and ``description``. If the
    function is missing or fails, ``entries`` is empty and ``error`` says why.
    """
    try:
        import mrlm.envs as envs_module
    except ImportError as exc:
        return {"entries": [], "error": f"mrlm.envs not importable: {exc}"}
    list_envs = getattr(envs_module, "list_envs", None)
    if not callable(list_envs):
        return {"entries": [], "error": ENVS_UNAVAILABLE}
    try:
        entries = [_env_entry(entry) for entry in list_envs()]
    except Exception as exc:  # a diagnostics command reports a broken registry instead of crashing
        return {"entries": [], "error": f"mrlm.envs.list_envs failed: {type(exc).__name__}: {exc}"}
    return {"entries": entries, "error": None}


def _env_entry(entry: Any) -> dict[str, Any]:
    """One registry entry as ``{"id": str, "kinds": list[str], "description": str}``."""

    def field(name: str, default: Any) -> Any:
        if isinstance(entry, dict):
            return entry.get(name, default)
        return getattr(entry, name, default)

    return {
        "id": str(field("id", "?")),
        "kinds": [str(kind) for kind in field("kinds", ())],
        "description": str(field("description", "")),
    }


def format_info(info: dict[str, Any]) -> str:
    """Render ``collect_info()`` output as aligned, human-readable text."""
    lines: list[str] = []

    def row(key: str, value: object, indent: int = 2) -> None:
        lines.append(f"{' ' * indent}{key:<{24 - indent}}{value}")

    def version(value: str | None) -> str:
        return value if value is not None else "not installed"

    lines.append("mrlm")
    for name, value in info["mrlm"].items():
        row(name, version(value))
    python = info["python"]
    row("python", f"{python['version']} ({python['implementation']}) {python['executable']}", indent=0)
    row("platform", info["platform"], indent=0)
    lines.append("libraries")
    for name, value in info["libraries"].items():
        row(name, version(value))

    devices = info["devices"]
    lines.append("devices")
    row("cpu count", devices["cpu_count"])
    if devices["cuda_available"]:
        for device in devices["cuda_devices"]:
            bf16 = "bf16" if device["bf16"] else "no bf16"
            row(
                f"cuda:{device['index']}",
                f"{device['name']} (sm {device['capability']}, {device['memory_gib']} GiB, {bf16})",
            )
    else:
        row("cuda", "not available")
    row("mps", "available" if devices["mps_available"] else "not available")

    envs = info["envs"]
    lines.append("envs")
    if envs["error"] is not None:
        lines.append(f"  {envs['error']}")
    elif not envs["entries"]:
        lines.append("  none registered")
    for entry in envs["entries"]:
        row(entry["id"], f"[{', '.join(entry['kinds'])}] {entry['description']}")

    algorithms = info["algorithms"]
    row("algorithms", ", ".join(algorithms) if algorithms else "none yet", indent=0)
    return "\n".join(lines)
