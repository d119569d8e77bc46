"""The worker side of the sandbox: modules run in worker processes started with ``python -I -S``.

Standard library only (pyseccomp is loaded from its file, in a helper). Process tree of one worker::

    launcher (host pid; makes the memory cgroup; creates the user, mount, network, pid, IPC namespaces)
    ├── janitor (removes the memory cgroup once the worker is gone)
    └── fork server (pid 1 of the worker's pid namespace, in a root file system of its own; talks to
        │            the caller; never forks per run)
        ├── zygote (one per exec policy; seccomp loaded; forks one process per execution)
        │   └── the program (pid 1 of its own pid and IPC namespaces; memory cgroup, sandbox uid, rlimits)
        └── zygote allowing exec (started on first need)
"""
