"""A worker's first process: it creates the worker's namespaces, forks the fork server into them, and
waits for it, passing on its exit status.

The fork server is its child rather than itself because a new pid namespace only applies to the
children of the process that creates it. The server is killed if this process dies.
"""

from __future__ import annotations

import json
import os
from typing import NoReturn

from mrlm.envs.sandbox import protocol
from mrlm.envs.sandbox.forkserver import exposure, namespaces, server, startup
from mrlm.envs.sandbox.forkserver.plan import Plan, WorkerConfig


def main(config_json: str) -> NoReturn:
    """Start the worker described by ``config_json``; stdin carries requests, stdout replies."""
    config = WorkerConfig.from_json(json.loads(config_json))
    # Keep the channel off fds 0 and 1, so nothing printed by accident can corrupt it.
    channel_in, channel_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    plan = Plan(config, root_mode=os.geteuid() == 0)
    try:
        startup.memory_cgroup(plan)  # first: only the caller's own uid may make one
        namespaces.enter_namespaces(plan, exposure.needed_paths([config.pyseccomp]))
    except BaseException as error:
        failure = {"ready": False, "error": f"{type(error).__name__}: {error}", "warnings": plan.warnings}
        protocol.write_message(channel_out, failure)
        os._exit(1)
    server_pid = os.fork()
    if server_pid == 0:
        try:
            server.run(channel_in, channel_out, plan)
        finally:
            os._exit(70)
    # Only the server may hold the channel: the caller must see end-of-file when it exits.
    os.close(channel_in)
    os.close(channel_out)
    _, status = os.waitpid(server_pid, 0)
    if plan.memory_cgroup is not None:
        plan.memory_cgroup.release()
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
