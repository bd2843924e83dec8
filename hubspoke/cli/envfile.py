"""What `hubspoke init` and `hubspoke stage` share: an AWS session that fails in one line, and environment-file
writes that are validated by the real loader first and never leave a half-written file."""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from hubspoke.cli.checks import Clients
from hubspoke.config import ConfigError, LoadedConfig, load


class BadInput(Exception):
    """A refusal for the user to fix: printed as one line, exit 2."""


def aws_session(profile: str | None) -> Any:
    """A boto3 Session of `profile` (None: AWS_PROFILE or the default chain); an unknown profile is BadInput."""
    import boto3
    from botocore.exceptions import ProfileNotFound

    try:
        return boto3.Session(profile_name=profile)
    except ProfileNotFound:
        # boto3 Session raises ProfileNotFound when the name is in neither ~/.aws/config nor ~/.aws/credentials.
        raise BadInput(
            f"--profile: no AWS profile named '{profile}'; list yours with `aws configure list-profiles`, "
            f"or create it with `aws configure --profile {profile}` (or `aws configure sso`)"
        ) from None


def profile_clients(profile: str | None) -> Clients:
    """One client per service and Region from the session of `profile`; an unknown profile is BadInput now."""
    session = aws_session(profile)
    made: dict[tuple[str, str], Any] = {}

    def make(service: str, region: str) -> Any:
        if (service, region) not in made:
            made[service, region] = session.client(service, region_name=region)
        return made[service, region]

    return make


def with_profile(command: str, profile: str | None) -> str:
    """An AWS CLI command line as printed for the user, with the --profile the command was given passed on."""
    return f"{command} --profile {profile}" if profile else command


_PLAIN = re.compile(r"[A-Za-z0-9@._/:+-]+")


def scalar(value: str) -> str:
    """`value` as a YAML scalar that reads back as the same string: plain where YAML keeps it a string, else quoted."""
    if _PLAIN.fullmatch(value) and yaml.safe_load(value) == value:
        return value
    # A JSON string is a YAML double-quoted scalar (YAML 1.2 is a superset of JSON).
    return json.dumps(value)


@contextmanager
def _validated_temp(target: Path, text: str) -> Iterator[tuple[Path, LoadedConfig]]:
    """`text` in a temporary file beside `target` (same filesystem, so a rename is atomic), loaded by the real
    loader; the temporary file is removed unless the caller moved it. Problems name `target`, not the temp."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".yaml")
    temp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        try:
            loaded = load(temp)
        except ConfigError as exc:
            raise ConfigError(target, exc.problems) from None
        yield temp, loaded
    finally:
        temp.unlink(missing_ok=True)


def validate_text(target: Path, text: str) -> LoadedConfig:
    """`text` loaded as if it were `target`, without writing `target`."""
    with _validated_temp(target, text) as (_, loaded):
        return LoadedConfig(target, loaded.config, loaded.warnings)


def write_new(target: Path, text: str) -> LoadedConfig:
    """Validate `text`, then create `target` with it atomically; an existing file is never replaced (BadInput)."""
    with _validated_temp(target, text) as (temp, loaded):
        os.chmod(temp, 0o644)  # mkstemp makes 0600; a config is no secret
        try:
            # link(2) fails with EEXIST rather than replace: no overwrite even if the file appeared meanwhile.
            os.link(temp, target)
        except FileExistsError:
            raise BadInput(exists_message(target)) from None
    return LoadedConfig(target, loaded.config, loaded.warnings)


def exists_message(target: Path) -> str:
    return (
        f"{target} exists and is never overwritten; choose another --environment or --output, "
        "or move that file away first"
    )


def replace_validated(target: Path, text: str) -> LoadedConfig:
    """Validate `text`, then replace `target` with it in one rename, keeping its permissions."""
    mode = stat.S_IMODE(target.stat().st_mode)
    with _validated_temp(target, text) as (temp, loaded):
        os.chmod(temp, mode)
        os.replace(temp, target)
    return LoadedConfig(target, loaded.config, loaded.warnings)


def _child(node: yaml.Node, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return v
    return None


def set_in_regions(text: str, path: tuple[str, ...], value: str) -> str:
    """`text` with the scalar at `path` (e.g. storage, qumulo_core, version) of the hub and of every spoke set to
    `value`, where it is written; every other character, comments included, is kept."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    regions: list[yaml.Node] = []
    hub = _child(root, "hub") if root is not None else None
    if hub is not None:
        regions.append(hub)
    spokes = _child(root, "spokes") if root is not None else None
    if isinstance(spokes, yaml.SequenceNode):
        regions += spokes.value
    spans: set[tuple[int, int, str | None]] = set()
    for region in regions:
        node: yaml.Node | None = region
        for key in path:
            node = _child(node, key) if node is not None else None
        if isinstance(node, yaml.ScalarNode):
            # An alias shares its anchor's node, so one span may be reached twice: the set keeps it once.
            spans.add((node.start_mark.index, node.end_mark.index, node.style))
    for start, end, style in sorted(spans, reverse=True):
        # A value written quoted stays quoted; a plain one stays plain where YAML keeps it a string.
        text = text[:start] + (scalar(value) if style is None else json.dumps(value)) + text[end:]
    return text
