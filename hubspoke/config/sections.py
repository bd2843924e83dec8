"""A finding about a config file (Problem) and the shape of an environment-wide rule (Rule), which reads a valid
config: each field's own checks sit beside it in schema.py and run first."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hubspoke.config.schema import HubSpokeConfig


@dataclass(frozen=True)
class Problem:
    """One finding about a config file: where it is, what is wrong, and how to fix it."""

    field: str
    message: str
    severity: str = "error"


Rule = Callable[[HubSpokeConfig], Iterator[Problem]]
