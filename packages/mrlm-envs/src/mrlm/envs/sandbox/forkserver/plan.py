"""What a worker was asked for (its configuration) and what it found it can do (its plan).

No dataclasses in the worker's modules: importing them pulls in ``inspect`` and its kin, a megabyte
and a half of heap that every fork would have to copy the page tables of.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from mrlm.envs.sandbox.forkserver.cgroup import MemoryCgroup

#: Layers a worker switches on or off; the report's other two (separate_process, rlimits) always hold.
#: Strongest first: ``mrlm.envs.sandbox.LAYERS`` lists the report's layers in this order.
SWITCHABLE = (
    "user_namespace",
    "pid_namespace",
    "network_namespace",
    "mount_namespace",
    "ipc_namespace",
    "read_only_filesystem",
    "private_filesystem",
    "unprivileged_user",
    "seccomp",
    "memory_cgroup",
)
#: ``memory_bound`` of the report without a memory cgroup.
PER_PROCESS = "per-process rlimit"


class WorkerConfig(NamedTuple):
    """The caller's instructions, passed as JSON on the worker's command line.

    Attributes:
        slot: the worker's index in its pool; gives it its own sandbox uid.
        uid_base: first host uid of the range sandbox users are mapped to (when started as root).
        disable: layers to leave off.
        pyseccomp: path of the pyseccomp module file, or None when it is not installed.
        tmpdir: where scratch directories go when there is no private /tmp.
        preload: modules imported once in the worker so programs find them already loaded.
        hide: the caller's import paths that are not the standard library (site-packages, source
            trees): kept out of programs' sight should they lie inside a tree the worker shows.
    """

    slot: int
    uid_base: int
    disable: tuple[str, ...] = ()
    pyseccomp: str | None = None
    tmpdir: str = "/tmp"
    preload: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkerConfig:
        return cls(
            slot=int(data["slot"]),
            uid_base=int(data["uid_base"]),
            disable=tuple(data.get("disable", ())),
            pyseccomp=data.get("pyseccomp"),
            tmpdir=str(data.get("tmpdir", "/tmp")),
            preload=tuple(data.get("preload", ())),
            hide=tuple(data.get("hide", ())),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "slot": self.slot,
            "uid_base": self.uid_base,
            "disable": list(self.disable),
            "pyseccomp": self.pyseccomp,
            "tmpdir": self.tmpdir,
            "preload": list(self.preload),
            "hide": list(self.hide),
        }


class Plan:
    """The layers a worker applies to each execution, settled at start-up by trying them.

    Attributes:
        layers: each of :data:`SWITCHABLE`, True where it is active.
        warnings: why each missing layer is missing.
        sandbox_uid: the uid programs run as (inside the worker's user namespace when there is one),
            or None to keep the worker's uid and only drop capabilities.
        root_mode: the worker started as root (it could map and switch to other uids).
        config: the caller's configuration.
        memory_cgroup: the worker's memory cgroup while the layer of that name is on, else None.
    """

    def __init__(self, config: WorkerConfig, *, root_mode: bool) -> None:
        self.config = config
        self.root_mode = root_mode
        self.layers: dict[str, bool] = dict.fromkeys(SWITCHABLE, False)
        self.warnings: list[str] = []
        self.sandbox_uid: int | None = None
        self.memory_cgroup: MemoryCgroup | None = None

    def memory_bound(self) -> str:
        """What bounds an execution's memory: its cgroup (``"cgroup v1"``/``"cgroup v2"``) or
        :data:`PER_PROCESS`."""
        if self.memory_cgroup is not None and self.on("memory_cgroup"):
            return self.memory_cgroup.version
        return PER_PROCESS

    def on(self, layer: str) -> bool:
        return self.layers[layer]

    def wanted(self, layer: str) -> bool:
        """Whether the caller left ``layer`` enabled (it may still turn out to be unavailable)."""
        return layer not in self.config.disable

    def give_up(self, layer: str, why: str) -> None:
        """Record that ``layer`` is off, and why (unless the caller turned it off)."""
        self.layers[layer] = False
        reason = "disabled by the caller" if not self.wanted(layer) else why
        message = f"{layer}: {reason}"
        if message not in self.warnings:
            self.warnings.append(message)
