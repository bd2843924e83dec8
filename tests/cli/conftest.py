"""Fixtures for CLI tests: the fake AWS that preflight tests run against (see preflight_world.py)."""

from tests.cli.preflight_world import backend, world

__all__ = ["backend", "world"]
