"""Imported by ``mrlm-envs serve --import tests.envs.remote.serve_probe``: registers the test envs."""

from tests.envs.remote.probe_env import register_probe_envs

register_probe_envs()
