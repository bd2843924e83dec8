"""Value lists of the installed botocore's service models, read as files: the instance types AWS accepts."""

from __future__ import annotations

import difflib
import gzip
import importlib.util
import json
from functools import cache
from pathlib import Path


@cache
def enum(service: str, shape: str) -> frozenset[str]:
    """The enum of `shape` in botocore's newest model of `service` (data/<service>/<version>/service-2.json[.gz]).

    Read as a file, not through botocore's Loader: `hubspoke validate` must not import the AWS SDK (it runs in
    pre-commit hooks; tests/cli/test_main.py). Empty when botocore is not installed: nothing is refused then.
    """
    spec = importlib.util.find_spec("botocore")
    if spec is None or spec.origin is None:
        return frozenset()
    newest = max((Path(spec.origin).parent / "data" / service).iterdir())
    plain = newest / "service-2.json"
    text = (
        plain.read_text("utf-8")
        if plain.exists()
        else gzip.decompress((newest / "service-2.json.gz").read_bytes())
    )
    return frozenset(json.loads(text)["shapes"][shape]["enum"])


def check(value: str, service: str, shape: str, what: str) -> str:
    """`value` if the model lists it, else a ValueError naming the closest listed value."""
    known = enum(service, shape)
    if not known or value in known:
        return value
    close = difflib.get_close_matches(value, sorted(known), n=1, cutoff=0.8)
    hint = f"did you mean {close[0]}?" if close else f"pick one botocore's {service} model lists ({shape})"
    raise ValueError(f"'{value}' is not {what} (botocore's {service} model, {shape}); {hint}")
