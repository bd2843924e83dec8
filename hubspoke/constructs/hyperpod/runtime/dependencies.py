"""Custom::HyperPodDependencies: install the HyperPod dependencies Helm chart from a pinned upstream commit.

HyperPod needs the chart (health agent, device plugins, training operator) before the cluster is created, and
it is published only as a folder of aws/sagemaker-hyperpod-cli, so this fetches one pinned commit's archive,
resolves its sub-charts and runs `helm upgrade --install`; nothing upstream is stored here. Stdlib only, on
the Lambda Python runtime. Lambda has no HOME and a read-only working directory ("Defined runtime environment
variables"), so `tool_environment` puts the layers first on PATH, for the kubeconfig's bare `aws` (awscli
customizations/eks/update_kubeconfig.py get_user_entry; client-go plugin/pkg/client/auth/exec), and helm's
homes under /tmp (helm pkg/helmpath lazypath.go).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

# Where the layers put their tools: the kubectl layer (hubspoke/constructs/hyperpod/eks.py, KubectlLayer)
# /opt/helm/helm and /opt/kubectl/kubectl (its README),
# AwsCliLayer /opt/awscli/aws. aws-cdk-lib's own helm handler prefixes PATH with /opt/helm:/opt/awscli.
LAYER_BIN_DIRS = ("/opt/helm", "/opt/kubectl", "/opt/awscli")
RUNBOOK = "docs/runbooks/compute.md, section 'The HyperPod dependencies chart did not install'"
FETCH_ATTEMPTS = 3
FETCH_TIMEOUT_S = 60
MAX_ARCHIVE_BYTES = 200 * 1024 * 1024
# The chart's namespace is fixed by HyperPod ("The aws-hyperpod namespace name cannot be modified" applies
# to what the chart creates; the release itself lives in kube-system, as the HyperPod guide installs it).
RELEASE_NAMESPACE = "kube-system"


class DependenciesError(RuntimeError):
    """A failure with the reason and what to read next, as CloudFormation shows it in the stack events."""


def fetch_archive(url: str, *, attempts: int = FETCH_ATTEMPTS, timeout: float = FETCH_TIMEOUT_S,
                  sleep: Callable[[float], None] = time.sleep) -> bytes:  # fmt: skip
    """Download `url` with bounded retries; raises DependenciesError naming the URL and the last error."""
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                data: bytes = response.read(MAX_ARCHIVE_BYTES + 1)
            if len(data) > MAX_ARCHIVE_BYTES:
                raise DependenciesError(f"{url} is larger than {MAX_ARCHIVE_BYTES} bytes; refusing it")
            return data
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            last = f"{type(exc).__name__}: {exc}"
            LOG.warning("fetch %s failed (attempt %d of %d): %s", url, attempt, attempts, last)
            if attempt < attempts:
                sleep(2.0**attempt)
    raise DependenciesError(
        f"could not download the pinned HyperPod dependencies chart from {url} after {attempts} attempts "
        f"({last}); the Lambda needs outbound HTTPS through the VPC's NAT gateway. See {RUNBOOK}."
    )


def extract_chart(archive: bytes, *, chart_path: str, destination: Path) -> Path:
    """Extract only `chart_path` (e.g. helm_chart/HyperPodHelmChart) from a GitHub commit archive."""
    wanted = PurePosixPath(chart_path)
    found = False
    with tempfile.NamedTemporaryFile() as handle:
        handle.write(archive)
        handle.flush()
        with tarfile.open(handle.name, mode="r:gz") as tar:
            members = []
            for member in tar.getmembers():
                parts = PurePosixPath(member.name).parts
                # GitHub archives hold one top-level folder, <repo>-<commit>/; paths are relative to it.
                relative = PurePosixPath(*parts[1:]) if len(parts) > 1 else PurePosixPath()
                if relative == wanted or wanted in relative.parents:
                    member.name = str(relative)
                    members.append(member)
                    found = True
            if not found:
                raise DependenciesError(
                    f"the archive has no folder '{chart_path}'; the pinned commit does not hold the chart "
                    f"where hubspoke expects it. See {RUNBOOK}."
                )
            # The "data" filter refuses absolute paths, links out of the tree and device files.
            tar.extractall(destination, members=members, filter="data")
    chart = destination / chart_path
    if not (chart / "Chart.yaml").is_file():
        raise DependenciesError(f"'{chart_path}' at the pinned commit has no Chart.yaml. See {RUNBOOK}.")
    return chart


def tool_environment(workdir: Path, base: Mapping[str, str]) -> dict[str, str]:
    """`base` with the layers' tools on PATH and helm's homes and the kubeconfig inside `workdir` (in /tmp)."""
    env = dict(base)
    env["PATH"] = os.pathsep.join([*LAYER_BIN_DIRS, base.get("PATH", "")])
    for name in ("CACHE", "CONFIG", "DATA"):
        env[f"HELM_{name}_HOME"] = str(workdir / "helm" / name.lower())
    env["KUBECONFIG"] = str(workdir / "kubeconfig")
    return env


def run(command: list[str], *, what: str, env: Mapping[str, str]) -> None:
    """Run one CLI step; on failure raise with its output, so the stack event says what went wrong."""
    LOG.info("running: %s", " ".join(command))
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, env=env)
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip()[-1500:]
        raise DependenciesError(f"{what} failed (exit {result.returncode}): {output}. See {RUNBOOK}.")
    LOG.info("%s: %s", what, result.stdout.strip()[-1500:])


def chart_values(props: Mapping[str, Any]) -> dict[str, Any]:
    """The chart values, sent as one JSON string: CloudFormation turns every custom-resource property value into
    a string (so a boolean would arrive as "true"); a JSON document keeps its types."""
    raw = props.get("Values") or "{}"
    if not isinstance(raw, str):
        raise DependenciesError(
            "the Values property must be one JSON string (the construct sends json.dumps)"
        )
    try:
        values = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DependenciesError(f"the Values property is not valid JSON: {exc}") from None
    if not isinstance(values, dict):
        raise DependenciesError("the Values property must be a JSON object")
    return values


def install(props: Mapping[str, Any], workdir: Path) -> None:
    """Fetch the pinned chart and `helm upgrade --install` it into the cluster."""
    values = workdir / "values.json"
    values.write_text(json.dumps(chart_values(props)))
    chart = extract_chart(
        fetch_archive(str(props["ArchiveUrl"])), chart_path=str(props["ChartPath"]), destination=workdir
    )
    env = tool_environment(workdir, os.environ)
    run(["aws", "eks", "update-kubeconfig", "--name", str(props["ClusterName"])],
        what="aws eks update-kubeconfig", env=env)  # fmt: skip
    # Sub-chart versions are pinned in the chart's Chart.yaml; this resolves them (some are remote repos).
    run(["helm", "dependency", "update", str(chart)], what="helm dependency update", env=env)
    run(
        ["helm", "upgrade", "--install", str(props["Release"]), str(chart), "--namespace", RELEASE_NAMESPACE,
         "--values", str(values), "--timeout", "10m"],
        what="helm upgrade --install", env=env,
    )  # fmt: skip


def uninstall(props: Mapping[str, Any], workdir: Path) -> None:
    """Remove the release; a cluster or release that is already gone is not an error on delete."""
    env = tool_environment(workdir, os.environ)
    try:
        run(["aws", "eks", "update-kubeconfig", "--name", str(props["ClusterName"])],
            what="aws eks update-kubeconfig", env=env)  # fmt: skip
        run(["helm", "uninstall", str(props["Release"]), "--namespace", RELEASE_NAMESPACE],
            what="helm uninstall", env=env)  # fmt: skip
    except DependenciesError as exc:
        LOG.warning("leaving the release as it is: %s", exc)


def on_event(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """Provider-framework entry point: Create/Update install or upgrade, Delete uninstalls."""
    props = event["ResourceProperties"]
    LOG.info(
        "%s %s", event["RequestType"], json.dumps({k: v for k, v in props.items() if k != "ServiceToken"})
    )
    workdir = Path(tempfile.mkdtemp(prefix="hyperpod-deps-"))
    try:
        if event["RequestType"] == "Delete":
            uninstall(props, workdir)
        else:
            install(props, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    # One physical ID for the life of the release: a new commit is an in-place upgrade, never a
    # replacement (CloudFormation would delete the old "resource", i.e. uninstall, after the update).
    return {"PhysicalResourceId": str(props["Release"]), "Data": {"Commit": str(props.get("Commit", ""))}}
