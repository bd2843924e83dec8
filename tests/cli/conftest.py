"""Fixtures for CLI tests: the fake AWS of preflight and verify (preflight_world.py, verify_world.py)."""

from tests.cli.preflight_world import backend, world
from tests.cli.verify_fixtures import deployed, deployed_config, deployed_templates, kube

__all__ = ["backend", "deployed", "deployed_config", "deployed_templates", "kube", "world"]
