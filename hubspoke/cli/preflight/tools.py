"""The local tools the AWS path runs (AWS CLI v2, the Session Manager plugin, kubectl, docker): one preflight row.

deploy, connect, train and dataset load run them as subprocesses; a missing one otherwise fails an hour into a
deploy or half-way through a training run. The list is docs/getting-started.md's "Before you start".
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable

from hubspoke.cli.checks import CheckResult

CHECK = "local tools"
# `aws --version` prints "aws-cli/2.x.y Python/... ..." for v2 (AWS CLI User Guide, "Installing or updating to the
# latest version of the AWS CLI") and "aws-cli/1.x.y Python/..." for v1 (AWS CLI v1 User Guide, "Installing ...
# the AWS CLI version 1 on Linux"); v1 printed it to stderr on old Pythons, so both streams are read.
_AWS_VERSION = re.compile(r"aws-cli/(\d+)\.(\d+)\.(\d+)")
# ASSUMED: hubspoke's aws commands (`ssm start-session --document-name AWS-StartPortForwardingSessionToRemoteHost`,
# `eks update-kubeconfig --alias --role-arn --kubeconfig`, `ecr get-login-password`) are written against the v2
# command reference; v1 is in maintenance with end of support announced (AWS CLI v1 User Guide's banner), and v1
# before 1.24.0 writes kubeconfig exec entries in client.authentication.k8s.io/v1alpha1, which kubectl 1.24+
# refuses (aws/containers-roadmap#1736). So v2 is required, as getting-started says.
AWS_CLI_MAJOR = 2
INSTALL = {
    "aws": "install AWS CLI v2: AWS CLI User Guide, 'Installing or updating to the latest version of the AWS CLI'",
    # The plugin is what `aws ssm start-session` runs for every hubspoke tunnel (Systems Manager User Guide).
    "session-manager-plugin": "install it: AWS Systems Manager User Guide, 'Install the Session Manager plugin "
    "for the AWS CLI'",
    "kubectl": "install kubectl: Kubernetes docs, 'Install Tools' (within one minor version of the clusters')",
    "docker": "install Docker: Docker docs, 'Install Docker Engine' (the training image builds on an amd64 host)",
}
VERSION_TIMEOUT_S = 20


def _aws_version(aws: str, run: Callable[..., subprocess.CompletedProcess[str]]) -> str | None:
    """Why the `aws` found is not AWS CLI v2, or None when it is."""
    try:
        done = run([aws, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`{aws} --version` did not run ({exc})"
    said = f"{done.stdout} {done.stderr}".strip()
    found = _AWS_VERSION.search(said)
    if found is None:
        return f"`aws --version` said {said[:80]!r}, not aws-cli/<version>"
    if int(found.group(1)) != AWS_CLI_MAJOR:
        return f"aws is AWS CLI {'.'.join(found.groups())}; hubspoke runs AWS CLI v2's commands"
    return None


def check_local_tools(
    region: str,
    *,
    path: str | None = None,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> list[CheckResult]:
    """One row per missing or wrong tool (fail, with where to install it), or one pass naming them all."""
    search = os.environ.get("PATH", "") if path is None else path
    rows = []
    for tool, fix in INSTALL.items():
        found = shutil.which(tool, path=search)
        why = (
            f"{tool} is not on PATH"
            if found is None
            else (_aws_version(found, run) if tool == "aws" else None)
        )
        if why:
            rows.append(CheckResult(region, CHECK, "fail", why, fix))
    return rows or [CheckResult(region, CHECK, "pass", f"AWS CLI v2, {', '.join(list(INSTALL)[1:])} on PATH")]
