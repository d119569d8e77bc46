"""Entry point of a worker process: ``python -I -S boot.py CONFIG_JSON``.

The worker runs without site-packages, so importing ``mrlm.envs`` normally would fail (its
``__init__`` needs third-party packages) and would be slow. Registering bare parent packages lets the
sandbox's own standard-library-only modules import under their real names.
"""

from __future__ import annotations

import os
import sys
import types


def _register_parent_packages() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sandbox = os.path.dirname(here)
    envs = os.path.dirname(sandbox)
    for name, path in (
        ("mrlm", os.path.dirname(envs)),
        ("mrlm.envs", envs),
        ("mrlm.envs.sandbox", sandbox),
    ):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [path]
            sys.modules[name] = package


if __name__ == "__main__":
    _register_parent_packages()
    from mrlm.envs.sandbox.forkserver import launcher

    launcher.main(sys.argv[1])
