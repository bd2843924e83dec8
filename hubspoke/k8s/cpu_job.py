"""A CPU-only batch Job in the training namespace, hardened the same way for every hubspoke tool (prewarm, bench)."""

from __future__ import annotations

import posixpath
from typing import Any

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.k8s.names import NAMESPACE
from hubspoke.k8s.run import TRAIN_SCRIPT
from hubspoke.k8s.run import image_for as _image_for
from hubspoke.k8s.storage import PART_OF, Manifest

# The training image carries every workload/ program beside train.py (workload/Dockerfile).
SCRIPT_DIR = posixpath.dirname(TRAIN_SCRIPT)
# The programs exit 2 on bad arguments: retrying cannot help, so such a pod fails the Job at once.
EXIT_BAD_INPUT = 2


def image_for(config: HubSpokeConfig, region: RegionConfig, override: str | None) -> str:
    return _image_for(override, region)


def tool_labels(config: HubSpokeConfig, region: RegionConfig, tool: str) -> dict[str, str]:
    """The labels of every hubspoke tool's pods: which tool, environment and Region."""
    return {
        **PART_OF,
        "hubspoke/tool": tool,
        "hubspoke/environment": config.environment,
        "hubspoke/region": region.region,
    }


def hardened() -> dict[str, Any]:
    """A tool container's securityContext: no privilege escalation, no capabilities, a read-only root."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def cpu_job(
    *,
    config: HubSpokeConfig,
    region: RegionConfig,
    name: str,
    tool: str,
    image: str,
    args: list[str],
    env: list[dict[str, Any]],
    volume_mounts: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
    cpu: str,
    memory: str,
    backoff_limit: int,
    node_affinity: dict[str, Any] | None = None,
) -> Manifest:
    """A Job running `python SCRIPT_DIR/<tool>.py ARGS`: no GPU, read-only root, no privilege."""
    labels = tool_labels(config, region, tool)
    # A container's name is a DNS_LABEL (Kubernetes API, Container.name: lowercase letters, digits and '-'), which
    # a program's module name such as bench_reader is not.
    container_name = tool.replace("_", "-")
    container: dict[str, Any] = {
        "name": container_name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python", f"{SCRIPT_DIR}/{tool}.py", *args],
        "env": [
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            # The root filesystem is read-only: no bytecode cache to write.
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
            *env,
        ],
        "resources": {
            "requests": {"cpu": cpu, "memory": memory},
            "limits": {"memory": memory},
        },
        "securityContext": hardened(),
        "volumeMounts": volume_mounts,
    }
    pod_spec: dict[str, Any] = {
        # podFailurePolicy needs Never; the Job controller makes the new pods, each resuming the work.
        "restartPolicy": "Never",
        "containers": [container],
        "volumes": volumes,
    }
    if node_affinity:
        pod_spec["affinity"] = {"nodeAffinity": node_affinity}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "backoffLimit": backoff_limit,
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "FailJob",
                        "onExitCodes": {
                            "containerName": container_name,
                            "operator": "In",
                            "values": [EXIT_BAD_INPUT],
                        },
                    }
                ]
            },
            # Keep the finished Job (and its logs) for a day, then let Kubernetes clean it up.
            "ttlSecondsAfterFinished": 86400,
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }
