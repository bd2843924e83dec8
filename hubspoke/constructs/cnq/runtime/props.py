"""What every provisioning handler shares: AWS clients, secrets, and the custom resource's properties."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import boto3

from .session import ProvisioningError

DEFAULT_REST_PORT = 8000


@functools.cache
def aws(service: str, region: str | None = None) -> Any:
    """One boto3 client per service and Region for the life of the Lambda container (each costs a model load)."""
    return boto3.client(service, region_name=region)


def read_secret(arn: str) -> str:
    """The SecretString of `arn`, from the secret's own Region (a spoke reads its hub's secret)."""
    value = aws("secretsmanager", arn.split(":")[3]).get_secret_value(SecretId=arn)["SecretString"]
    return str(value)


def strings(props: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list property (CloudFormation passes lists of strings; a joined string is split at commas)."""
    value = props.get(key) or []
    if isinstance(value, str):
        value = [v for v in value.split(",") if v]
    return tuple(str(v).strip() for v in value)


def require(props: Mapping[str, Any], *keys: str) -> None:
    """Fail the request, naming them, when properties it needs are missing or empty."""
    missing = [k for k in keys if props.get(k) in (None, "", [])]
    if missing:
        raise ProvisioningError(f"missing resource properties: {', '.join(missing)}")
