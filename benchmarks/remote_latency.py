"""Latency and throughput of Math-v0 served by ``mrlm-envs serve`` over loopback, against local. Prints JSON.

Servers run in processes of their own (``python -m mrlm.envs.cli serve --port 0``), as in real use, so
client and servers do not share an interpreter lock. A "call" is one ``reset`` or one ``step``: each
makes one round trip, and every episode here is one reset and one step. Measured:

- ``latency_us``: per-call round trip of ``reset`` and of ``step`` (p50, p99, mean), for the local env
  (``mrlm.envs.make``) and the remote one (``RemoteEnv``) on a one-process server.
- ``throughput``: on that server, calls per second with 1, 8 and 32 concurrent clients (threads, each
  with its own ``RemoteEnv`` session, looping reset + step), each client with its own connection or
  all on one coalescing connection (``Connection(coalesce=True)``, concurrent calls sent as one
  ``Batch``); and with one ``RemoteVectorEnv`` stepping ``--vector-envs`` sessions per ``Batch`` call
  and per ``StepStream`` message.
- ``scaling``: the same client load against three set-ups, side by side, in ``--rounds`` rounds whose
  order alternates: one server process; one server of ``--processes`` processes sharing its port
  (``--processes N``, SO_REUSEPORT); ``--processes`` one-process servers on their own ports. The
  clients are ``--scaling-clients`` threads of this process (``clients_N``), each a ``RemoteEnv``
  with a connection of its own, given the servers as one list (``host:port1,host:port2``, sessions
  dealt over them in turn); and ``--client-processes`` processes (``client_processes_N``), each one
  ``RemoteEnv`` on a connection of its own, client ``i`` given server ``i`` of the list, as separate
  rollout workers would be: threads of one process share its interpreter lock, so past one client
  they measure the client process as much as the servers. For each: calls per second (median of the
  rounds, and each round), the p50 and p99 of every call's round trip, and the CPU time the servers
  and the clients spent per call (from ``/proc``): with clients and servers on one machine, their
  sum bounds what the machine's cores can serve.

Run: ``uv run python benchmarks/remote_latency.py`` (``--steps 200 --duration 0.5 --rounds 1`` for a smoke
run; ``--scaling-only`` for the last part alone; ``--client-processes ""`` to leave those runs out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import select
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mrlm.envs
from mrlm.envs.remote import Connection, RemoteEnv, RemoteVectorEnv

ENV_ID = "mrlm/Math-v0"
KWARGS: dict[str, Any] = {"level": 1}
REPLIES = [f"The answer is \\boxed{{{n}}}" for n in range(97)]


@dataclass
class Server:
    """A ``mrlm-envs serve`` process (and, with ``--processes``, its server processes)."""

    process: subprocess.Popen[str]
    address: str
    pids: list[int] = field(default_factory=list)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def start_server(workers: int, processes: int = 1) -> Server:
    """Start ``mrlm-envs serve`` on a free loopback port and wait until it listens."""
    command = [
        sys.executable, "-m", "mrlm.envs.cli", "serve", "--envs", ENV_ID, "--host", "127.0.0.1",
        "--port", "0", "--workers", str(workers), "--processes", str(processes), "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 180.0)
    match = re.search(r"on (\S+:\d+) ", process.stdout.readline() if ready else "")
    if match is None:
        process.kill()
        raise SystemExit("the server did not start")
    pids = [process.pid] + (_children(process.pid) if processes > 1 else [])
    return Server(process, match.group(1), pids)


def _children(pid: int) -> list[int]:
    """The server processes of ``mrlm-envs serve`` process ``pid`` (its children, but for the helper
    process of ``multiprocessing``)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                command = Path(f"/proc/{entry}/cmdline").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and "resource_tracker" not in command:
                found.append(int(entry))
    return sorted(found)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, in seconds (0 where /proc cannot tell)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(ordered[len(ordered) // 2] * 1e6, 1),
        "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e6, 1),
        "mean": round(statistics.fmean(ordered) * 1e6, 1),
    }


def latency(env: Any, episodes: int) -> dict[str, dict[str, float]]:
    """Time each reset and each step of ``episodes`` one-step episodes."""
    resets, steps = [], []
    for episode in range(episodes):
        start = time.perf_counter()
        env.reset(seed=episode)
        middle = time.perf_counter()
        env.step(REPLIES[episode % len(REPLIES)])
        end = time.perf_counter()
        resets.append(middle - start)
        steps.append(end - middle)
    return {"reset": percentiles(resets), "step": percentiles(steps)}


@dataclass
class Load:
    """What one threaded run measured."""

    calls: int
    elapsed_s: float
    round_trips_s: list[float]
    server_cpu_s: list[float]
    client_cpu_s: float
    servers_used: dict[str, int]


def timed_episodes(env: Any, stop_at: float, first_seed: int, times: list[float]) -> int:
    """Play one-step episodes (a reset, then a step) on ``env`` until ``stop_at`` (a
    ``time.perf_counter()`` instant), appending each call's round trip to ``times``; returns how many."""
    episode, clock = first_seed, time.perf_counter
    while True:
        start = clock()
        if start >= stop_at:
            return episode - first_seed
        env.reset(seed=episode)
        middle = clock()
        env.step(REPLIES[episode % len(REPLIES)])
        times.append(middle - start)
        times.append(clock() - middle)
        episode += 1


def threaded_load(
    address: str | Connection, clients: int, duration_s: float, server_pids: Sequence[int] = ()
) -> Load:
    """``clients`` threads, each looping reset + step on its own ``RemoteEnv`` session for ``duration_s``,
    every call timed; the CPU time of ``server_pids`` and of this process is read around the run."""
    envs = [RemoteEnv(address, ENV_ID, **KWARGS) for _ in range(clients)]
    for env in envs:  # connect (and let each env open its connection) before the clock starts
        env.reset(seed=0)
    counts = [0] * clients
    round_trips: list[list[float]] = [[] for _ in range(clients)]
    start_line = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def loop(index: int) -> None:
        start_line.wait()
        counts[index] = timed_episodes(envs[index], stop_at[0], index * 1_000_000, round_trips[index])

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    server_before = [cpu_seconds(pid) for pid in server_pids]
    client_before = time.process_time()
    stop_at[0] = time.perf_counter() + duration_s
    started = time.perf_counter()
    start_line.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    client_cpu = time.process_time() - client_before
    server_cpu = [cpu_seconds(pid) - before for pid, before in zip(server_pids, server_before, strict=True)]
    used: dict[str, int] = {}
    for env in envs:
        used[env.connection.address] = used.get(env.connection.address, 0) + 1
        env.close()
    return Load(
        calls=2 * sum(counts),
        elapsed_s=elapsed,
        round_trips_s=[t for times in round_trips for t in times],
        server_cpu_s=server_cpu,
        client_cpu_s=client_cpu,
        servers_used=used,
    )


def process_load(address: str, clients: int, duration_s: float, server_pids: Sequence[int] = ()) -> Load:
    """``clients`` processes (this script with ``--client-worker``), each looping reset + step on one
    ``RemoteEnv`` session for ``duration_s``, every call timed; client ``i`` is given the ``i``-th
    address of a comma-separated list (in turn). They connect first, then all start at once."""
    addresses = address.split(",")
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--client-worker",
                addresses[i % len(addresses)],
                str(duration_s),
                str(i),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(clients)
    ]
    results: list[dict[str, Any]] = []
    try:
        for worker in workers:  # each says "ready" once connected, its session open
            if _line_from(worker, 120.0) != "ready":
                raise SystemExit(f"client process {worker.pid} did not start (its stderr is above)")
        server_before = [cpu_seconds(pid) for pid in server_pids]
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        for worker in workers:
            line = _line_from(worker, duration_s + 60.0)
            if not line.startswith("{"):
                raise SystemExit(f"client process {worker.pid} ended without a result (its stderr is above)")
            results.append(json.loads(line))
        server_cpu = [
            cpu_seconds(pid) - before for pid, before in zip(server_pids, server_before, strict=True)
        ]
    finally:
        for worker in workers:  # each exits once it has printed its result; on a failure, now
            if len(results) < clients:
                worker.kill()
            worker.wait(timeout=60)
    used: dict[str, int] = {}
    for result in results:
        used[result["address"]] = used.get(result["address"], 0) + 1
    return Load(
        calls=sum(result["calls"] for result in results),
        elapsed_s=max(result["elapsed_s"] for result in results),
        round_trips_s=[t for result in results for t in result["round_trips_s"]],
        server_cpu_s=server_cpu,
        client_cpu_s=sum(result["cpu_s"] for result in results),
        servers_used=used,
    )


def _line_from(worker: subprocess.Popen[str], timeout_s: float) -> str:
    """The next line ``worker`` prints, stripped; "" if it printed none within ``timeout_s`` or ended."""
    assert worker.stdout is not None
    ready, _, _ = select.select([worker.stdout], [], [], timeout_s)
    return worker.stdout.readline().strip() if ready else ""


def client_worker(address: str, duration_s: float, index: int) -> None:
    """Client process ``index`` of :func:`process_load`: open a session, say "ready", wait for "go" on
    stdin, loop reset + step for ``duration_s``, print what it measured as one JSON line."""
    env = RemoteEnv(address, ENV_ID, **KWARGS)
    env.reset(seed=0)
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":  # the benchmark is gone
        env.close()
        return
    times: list[float] = []
    cpu_before = time.process_time()
    started = time.perf_counter()
    episodes = timed_episodes(env, started + duration_s, index * 1_000_000, times)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_before
    served_by = env.connection.address
    env.close()
    result = {
        "calls": 2 * episodes,
        "elapsed_s": elapsed,
        "round_trips_s": times,
        "cpu_s": cpu,
        "address": served_by,
    }
    print(json.dumps(result), flush=True)


def threaded_throughput(address: str, clients: int, duration_s: float, coalesce: bool) -> dict[str, float]:
    """Calls per second of ``clients`` threads, each looping reset + step on its own session.

    Each client has its own connection, or (``coalesce``) all share one ``Connection(coalesce=True)``,
    which sends the calls made at the same time as one ``Batch``.
    """
    shared = Connection(address, coalesce=True) if coalesce else None
    load = threaded_load(shared or address, clients, duration_s)
    if shared is not None:
        shared.close()
    return {
        "episodes_per_s": round(load.calls / 2 / load.elapsed_s, 1),
        "calls_per_s": round(load.calls / load.elapsed_s, 1),
    }


def vector_throughput(address: str, num_envs: int, duration_s: float, stream: bool) -> dict[str, float]:
    """Sub-env steps per second of a ``RemoteVectorEnv`` (each step autoresets the previous episodes)."""
    env = RemoteVectorEnv(address, ENV_ID, num_envs, stream=stream, **KWARGS)
    env.reset(seed=0)
    actions = tuple(REPLIES[i % len(REPLIES)] for i in range(num_envs))
    calls = 0
    started = time.perf_counter()
    while time.perf_counter() - started < duration_s:
        env.step(actions)
        calls += 1
    elapsed = time.perf_counter() - started
    env.close()
    # Half the sub-env calls are autoresets (one-step episodes): each is a reset or a step on the server.
    return {
        "round_trips_per_s": round(calls / elapsed, 1),
        "calls_per_s": round(calls * num_envs / elapsed, 1),
        "round_trip_us": round(elapsed / calls * 1e6, 1),
    }


def scaling(args: argparse.Namespace) -> dict[str, Any]:
    """One process, ``--processes`` processes on one port, and as many one-process servers as a list,
    under the same loads, rounds alternating."""
    n = args.processes
    log(f"scaling: starting the servers (1 process; {n} processes; {n} servers of 1)")
    single = start_server(args.workers)
    shared_port = start_server(args.workers, processes=n)
    separate = [start_server(args.workers) for _ in range(n)]
    setups: dict[str, tuple[str, list[int]]] = {
        "1_process": (single.address, single.pids),
        f"{n}_processes": (shared_port.address, shared_port.pids),
        f"{n}_addresses": (
            ",".join(server.address for server in separate),
            [pid for server in separate for pid in server.pids],
        ),
    }
    loads = [("clients", int(c)) for c in args.scaling_clients.split(",") if c]
    loads += [("client_processes", int(c)) for c in args.client_processes.split(",") if c]
    runs: dict[tuple[str, int, str], list[Load]] = {}
    try:
        for round_number in range(args.rounds):
            for kind, clients in loads:
                order = list(setups) if round_number % 2 == 0 else list(reversed(setups))
                for name in order:
                    address, pids = setups[name]
                    log(f"scaling: round {round_number + 1}, {kind} {clients}, {name}")
                    load = threaded_load if kind == "clients" else process_load
                    runs.setdefault((kind, clients, name), []).append(
                        load(address, clients, args.duration, pids)
                    )
    finally:
        for server in (single, shared_port, *separate):
            server.stop()
    report: dict[str, Any] = {"rounds": args.rounds, "duration_s": args.duration, "processes": n}
    for kind, clients in loads:
        row: dict[str, Any] = {}
        for name in setups:
            row[name] = summary(runs[(kind, clients, name)], name, setups[name][1])
        report[f"{kind}_{clients}"] = row
    return report


def summary(loads: list[Load], name: str, pids: list[int]) -> dict[str, Any]:
    """Calls per second (median of the rounds), round trips and CPU per call of one set-up."""
    rates = [load.calls / load.elapsed_s for load in loads]
    calls = sum(load.calls for load in loads)
    trips = percentiles([t for load in loads for t in load.round_trips_s])
    server_cpu = [sum(cpus) for cpus in zip(*(load.server_cpu_s for load in loads), strict=True)]
    out: dict[str, Any] = {
        "calls_per_s": round(statistics.median(rates), 1),
        "calls_per_s_rounds": [round(rate, 1) for rate in rates],
        "p50_us": trips["p50"],
        "p99_us": trips["p99"],
        "server_cpu_us_per_call": round(sum(server_cpu) / calls * 1e6, 1),
        "client_cpu_us_per_call": round(sum(load.client_cpu_s for load in loads) / calls * 1e6, 1),
    }
    if name.endswith("_processes") and sum(server_cpu) > 0:
        # How the kernel spread the connections: each process's share of the servers' CPU time.
        out["cpu_share_per_process"] = [round(cpu / sum(server_cpu), 2) for cpu in server_cpu[1:]]
    if name.endswith("_addresses"):
        used: dict[str, int] = {}
        for load in loads:
            for address, count in load.servers_used.items():
                used[address] = used.get(address, 0) + count
        out["sessions_per_server"] = used
    return out


def log(label: str) -> None:
    print(f"[remote_latency] {label}...", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=3000, help="episodes timed for latency")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per throughput measurement")
    parser.add_argument("--clients", default="1,8,32", help="comma-separated numbers of concurrent clients")
    parser.add_argument("--vector-envs", type=int, default=32, help="sessions per RemoteVectorEnv")
    parser.add_argument("--workers", type=int, default=16, help="the server's env worker threads")
    parser.add_argument("--processes", type=int, default=2, help="server processes (and servers) to scale to")
    parser.add_argument("--scaling-clients", default="1,2,4,8", help="client threads of the scaling runs")
    parser.add_argument(
        "--client-processes", default="1,2,4", help="client processes of the scaling runs (empty: none)"
    )
    parser.add_argument(
        "--client-worker", nargs=3, metavar=("ADDRESS", "SECONDS", "INDEX"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of the scaling runs (order alternating)"
    )
    parser.add_argument("--scaling-only", action="store_true", help="measure the scaling part alone")
    args = parser.parse_args()
    if args.client_worker:
        client_worker(args.client_worker[0], float(args.client_worker[1]), int(args.client_worker[2]))
        return

    report: dict[str, Any] = {
        "benchmark": "remote_latency",
        "env": ENV_ID,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        # Other work on the machine moves these numbers: the 1-minute load average before and after.
        "load_average": [round(os.getloadavg()[0], 2)],
    }
    if not args.scaling_only:
        server = start_server(args.workers)
        try:
            local = mrlm.envs.make(ENV_ID, **KWARGS)
            remote = RemoteEnv(server.address, ENV_ID, **KWARGS)
            warm_up = max(20, args.steps // 10)
            latency(local, warm_up)
            latency(remote, warm_up)
            log("latency")
            report["latency_us"] = {
                "local": latency(local, args.steps),
                "remote": latency(remote, args.steps),
            }
            remote.close()
            throughput: dict[str, dict[str, float]] = {}
            for n in [int(n) for n in args.clients.split(",") if n]:
                for coalesce in (False, True):
                    name = f"clients_{n}" + ("_coalesced" if coalesce else "")
                    log(name)
                    throughput[name] = threaded_throughput(server.address, n, args.duration, coalesce)
            for stream in (False, True):
                name = f"vector_{args.vector_envs}_{'stream' if stream else 'batch'}"
                log(name)
                throughput[name] = vector_throughput(server.address, args.vector_envs, args.duration, stream)
            report["throughput"] = throughput
        finally:
            server.stop()
    report["scaling"] = scaling(args)
    report["load_average"].append(round(os.getloadavg()[0], 2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
