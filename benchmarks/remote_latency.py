"""Latency and throughput of Math-v0 served by ``mrlm-envs serve`` over loopback, against local. Prints JSON.

The server runs in its own process (``python -m mrlm.envs.cli serve --port 0``), as in real use, so
client and server do not share an interpreter lock. Measured:

- ``latency_us``: per-call round trip of ``reset`` and of ``step`` (p50, p99, mean), for the local env
  (``mrlm.envs.make``) and the remote one (``RemoteEnv``); every episode is one reset and one step.
- ``throughput``: aggregate env calls per second with 1, 8 and 32 concurrent clients (threads, each
  with its own ``RemoteEnv`` session, looping reset + step), each client with its own connection or
  all on one coalescing connection (``Connection(coalesce=True)``, concurrent calls sent as one
  ``Batch``); and with one ``RemoteVectorEnv`` stepping ``--vector-envs`` sessions per ``Batch`` call
  and per ``StepStream`` message.

Run: ``uv run python benchmarks/remote_latency.py`` (``--steps 200 --duration 0.5`` for a smoke run).
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
from typing import Any

import mrlm.envs
from mrlm.envs.remote import Connection, RemoteEnv, RemoteVectorEnv

ENV_ID = "mrlm/Math-v0"
KWARGS: dict[str, Any] = {"level": 1}
REPLIES = [f"The answer is \\boxed{{{n}}}" for n in range(97)]


def start_server(workers: int) -> tuple[subprocess.Popen[str], str]:
    """Start ``mrlm-envs serve`` on a free loopback port; return the process and its address."""
    command = [
        sys.executable, "-m", "mrlm.envs.cli", "serve", "--envs", ENV_ID,
        "--host", "127.0.0.1", "--port", "0", "--workers", str(workers), "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 120.0)
    match = re.search(r"on (\S+:\d+) ", process.stdout.readline() if ready else "")
    if match is None:
        process.kill()
        raise SystemExit("the server did not start")
    return process, match.group(1)


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


def threaded_throughput(address: str, clients: int, duration_s: float, coalesce: bool) -> dict[str, float]:
    """Env calls per second of ``clients`` threads, each looping reset + step on its own session.

    Each client has its own connection, or (``coalesce``) all share one ``Connection(coalesce=True)``,
    which sends the calls made at the same time as one ``Batch``.
    """
    shared = Connection(address, coalesce=True) if coalesce else None
    envs = [RemoteEnv(shared or address, ENV_ID, **KWARGS) for _ in range(clients)]
    counts = [0] * clients
    start_line = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def loop(index: int) -> None:
        env, episode = envs[index], index * 1_000_000
        start_line.wait()
        while time.perf_counter() < stop_at[0]:
            env.reset(seed=episode)
            env.step(REPLIES[episode % len(REPLIES)])
            episode += 1
        counts[index] = episode - index * 1_000_000

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    stop_at[0] = time.perf_counter() + duration_s
    started = time.perf_counter()
    start_line.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    for env in envs:
        env.close()
    if shared is not None:
        shared.close()
    episodes = sum(counts)
    return {"episodes_per_s": round(episodes / elapsed, 1), "calls_per_s": round(2 * episodes / elapsed, 1)}


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
    args = parser.parse_args()

    process, address = start_server(args.workers)
    try:
        local = mrlm.envs.make(ENV_ID, **KWARGS)
        remote = RemoteEnv(address, ENV_ID, **KWARGS)
        warm_up = max(20, args.steps // 10)
        latency(local, warm_up)
        latency(remote, warm_up)
        report: dict[str, Any] = {
            "benchmark": "remote_latency",
            "env": ENV_ID,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            # Other work on the machine moves these numbers: the 1-minute load average before and after.
            "load_average": [round(os.getloadavg()[0], 2)],
        }
        log("latency")
        report["latency_us"] = {"local": latency(local, args.steps), "remote": latency(remote, args.steps)}
        remote.close()
        clients = [int(n) for n in args.clients.split(",") if n]
        throughput: dict[str, dict[str, float]] = {}
        for n in clients:
            for coalesce in (False, True):
                name = f"clients_{n}" + ("_coalesced" if coalesce else "")
                log(name)
                throughput[name] = threaded_throughput(address, n, args.duration, coalesce)
        for stream in (False, True):
            name = f"vector_{args.vector_envs}_{'stream' if stream else 'batch'}"
            log(name)
            throughput[name] = vector_throughput(address, args.vector_envs, args.duration, stream)
        report["throughput"] = throughput
        report["load_average"].append(round(os.getloadavg()[0], 2))
    finally:
        process.terminate()
        process.wait(timeout=60)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
