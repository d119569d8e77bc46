"""Import a standard-library-only module of ``mrlm.envs`` in a worker, without its packages' ``__init__``.

A worker runs without site-packages, so the ``__init__`` of a package such as ``mrlm.envs.code``
(which imports gymnasium) cannot run there. The module itself needs only the standard library: each
missing parent package is registered bare (a module with a ``__path__`` and nothing else), as
``boot`` does for the sandbox's own packages, and then the module is imported under its real name.
"""

from __future__ import annotations

import importlib
import os
import sys
import types

#: The namespace whose packages may be registered bare; anything else is imported as usual.
_ROOT = "mrlm.envs"


def import_alone(name: str) -> types.ModuleType:
    """Import ``name``; parents under ``mrlm.envs`` that are not imported yet are registered bare.

    Raises:
        ImportError: the module cannot be imported (a missing file, a third-party import).
    """
    if name.startswith(_ROOT + ".") and _ROOT in sys.modules:
        parts = name.split(".")
        for depth in range(len(_ROOT.split(".")) + 1, len(parts)):
            package_name = ".".join(parts[:depth])
            if package_name in sys.modules:
                continue
            parent = sys.modules[".".join(parts[: depth - 1])]
            package = types.ModuleType(package_name)
            package.__path__ = [os.path.join(parent.__path__[0], parts[depth - 1])]
            sys.modules[package_name] = package
    return importlib.import_module(name)
