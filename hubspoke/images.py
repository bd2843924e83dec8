"""Where the training image lives and which build a rendered job runs: the record `hubspoke image build` writes.

No CDK and no SDK: `hubspoke render` reads the record, `hubspoke image build` writes it. A job names its image
by digest (`<repository URI>@sha256:<hex>`), never by a tag someone can push again: the repository's tags are
IMMUTABLE too (hubspoke/constructs/image_repository.py), but a digest also survives a copy to another registry.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from hubspoke.config.schema import HubSpokeConfig, RegionConfig

# An image pinned by content: `name@sha256:<64 hex>` (OCI image spec, "Digests": algorithm sha256, lowercase
# hex of 64 characters).
DIGEST_REF = re.compile(r"^(?P<name>[a-z0-9.-]+(:\d+)?/[a-z0-9._/-]+)@(?P<digest>sha256:[0-9a-f]{64})$")
RECORD_SUFFIX = ".images.json"


def registry(config: HubSpokeConfig, region: RegionConfig) -> str:
    """The Region's private ECR registry host (Amazon ECR User Guide, "Private registry": the URL is
    https://aws_account_id.dkr.ecr.region.amazonaws.com)."""
    return f"{config.account_of(region)}.dkr.ecr.{region.region}.amazonaws.com"


def record_path(config_path: Path) -> Path:
    """Where the image build of a config is recorded: beside it (config/dev.yaml -> config/dev.images.json)."""
    return config_path.with_name(config_path.stem + RECORD_SUFFIX)


@dataclass(frozen=True)
class ImageRecord:
    """One build pushed to every compute Region: the tag it carries and its digest reference per Region."""

    environment: str
    tag: str
    base: str
    images: dict[str, str]

    def to_json(self) -> str:
        return json.dumps(
            {"environment": self.environment, "tag": self.tag, "base": self.base, "images": self.images},
            indent=2,
            sort_keys=True,
        )


class BadRecord(ValueError):
    """An image record that cannot be used; the message says why and how to fix it."""


def read_record(path: Path) -> ImageRecord | None:
    """The record at `path`, or None when there is none; a record that is not one raises BadRecord."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        record = ImageRecord(
            environment=str(data["environment"]),
            tag=str(data["tag"]),
            base=str(data["base"]),
            images={str(k): str(v) for k, v in dict(data["images"]).items()},
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise BadRecord(f"{path} is not an image record ({exc}): run `hubspoke image build` again") from None
    bad = [ref for ref in record.images.values() if not DIGEST_REF.match(ref)]
    if bad:
        raise BadRecord(
            f"{path} names images without a digest ({', '.join(bad)}): run `hubspoke image build` again"
        )
    return record
