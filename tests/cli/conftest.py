"""Fixtures for CLI tests: the fake AWS of preflight and verify (preflight_world.py, verify_world.py)."""

import pytest

from tests.cli.preflight_world import backend, world
from tests.cli.verify_fixtures import deployed, deployed_config, deployed_templates, kube

__all__ = ["backend", "deployed", "deployed_config", "deployed_templates", "kube", "world"]


@pytest.hookimpl(tryfirst=True)  # before pytest deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The fast tier runs the first case of each parametrized test that builds a moto world; the other cases
    are the thorough tier's (each such case deploys a world of its own: seconds, not milliseconds)."""
    seen: set[tuple[str, str]] = set()
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or not set(callspec.params) & _WORLDS:
            continue
        if "thorough" in item.keywords:
            continue  # the server twin, already the thorough tier's
        key = (str(item.path), item.originalname)  # type: ignore[attr-defined]
        if key in seen:
            item.add_marker(pytest.mark.thorough)
        seen.add(key)


# Parameters that mean "a moto world per case": every preflight and verify test takes one of them.
_WORLDS = {"backend"}
