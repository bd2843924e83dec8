"""A copy of everything moto holds (every backend of every account and Region), restored into a fresh mock_aws.

Building a world through moto's API costs the test that builds it; a copy taken once per test process and
restored for each later test gives every test the same world, fresh, for the price of two deep copies.
"""

from __future__ import annotations

import copy
import copyreg
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MotoState:
    """Every moto backend as it was, copied whole so each restore is fresh.

    The backends are copied in one deep copy, so a model's reference to its backend (a security group's
    `ec2_backend`, a stack's resource map) points at the copied backend; a restore copies again with those
    backends mapped to the live ones moto hands out, so every such reference lands on the live backend.
    """

    where: list[tuple[Any, str, str]]  # (BackendDict, account, Region) of each stored backend
    backends: list[Any]

    @classmethod
    def of(cls) -> MotoState:
        """What moto holds now (call inside mock_aws)."""
        from moto.core.base_backend import BackendDict

        live = [
            (backends, account, region, backend)
            for backends in BackendDict._instances
            for account, regions in backends.items()
            for region, backend in regions.items()
        ]
        with _copied_locks():
            stored = copy.deepcopy([backend for *_, backend in live])
        return cls([(b, a, r) for b, a, r, _ in live], stored)

    def restore(self) -> None:
        """Fill the current mock_aws backends with a copy of the stored ones (call inside a fresh mock_aws)."""
        # The live objects moto hands out (its lookups are cached): refilled in place, never replaced.
        lives = [backends[account][region] for backends, account, region in self.where]
        memo: dict[int, Any] = {id(stored): live for stored, live in zip(self.backends, lives, strict=True)}
        with _copied_locks():
            states = [copy.deepcopy(stored.__dict__, memo) for stored in self.backends]
        for live, attributes in zip(lives, states, strict=True):
            live.__dict__.clear()
            live.__dict__.update(attributes)
            _reindex_lambda_arns(live)


@contextmanager
def _copied_locks() -> Iterator[None]:
    """While the block runs, a deep copy of a reentrant lock is a new one, unheld: ECR's backend holds one (moto 5.2.5
    ecr/models.py, ECRBackend.registry_scanning_configuration_update_lock), which deepcopy cannot copy (copy.deepcopy
    falls back to copyreg's dispatch table, where this puts the lock's type)."""
    kind = type(threading.RLock())
    copyreg.pickle(kind, lambda _: (threading.RLock, ()))
    try:
        yield
    finally:
        copyreg.dispatch_table.pop(kind, None)


def _reindex_lambda_arns(backend: Any) -> None:
    """Rebuild moto's Lambda ARN index (a WeakValueDictionary) from the functions it indexes.

    copy.deepcopy of a WeakValueDictionary copies the keys but keeps the original values (CPython's
    weakref.WeakValueDictionary.__deepcopy__), so a copied index points at the first world's functions, which
    die with it: a later DeleteFunction then misses its ARN. moto 5.2.5 LambdaStorage (_functions, _arns).
    """
    storage = getattr(backend, "_lambdas", None)
    if storage is None or not hasattr(storage, "_arns"):
        return
    storage._arns = weakref.WeakValueDictionary()
    for entry in storage._functions.values():
        for function in [entry["latest"], *entry["versions"]]:
            if function is not None:
                storage._arns[function.function_arn] = function
