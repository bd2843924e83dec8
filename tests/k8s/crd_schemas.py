"""JSON schemas for the two job CRDs, derived by hand from their documented definitions (not vendored).

- PyTorchJob: kubeflow/training-operator v1.9.0, manifests/base/crds/kubeflow.org_pytorchjobs.yaml
  (spec.required = [pytorchReplicaSpecs]; ReplicaSpec = replicas int32, restartPolicy, template) plus the
  rules its admission webhook enforces (pkg/webhooks/pytorch/pytorchjob_webhook.go): replica types Master
  and Worker only, Master exactly 1 replica, every container has an image, one container named "pytorch",
  and a Worker spec whenever elasticPolicy is set. ElasticPolicy's fields: pkg/apis/kubeflow.org/v1
  pytorch_types.go (rdzvBackend c10d | etcd | etcd-v2, min/maxReplicas, maxRestarts, ...).
- HyperPodPyTorchJob: SageMaker developer guide, "Using the training operator to run jobs" (example job:
  apiVersion sagemaker.amazonaws.com/v1, spec.nprocPerNode string, spec.replicaSpecs list of name/replicas/
  template, spec.runPolicy with jobMaxRetryCount, restartPolicy, cleanPodPolicy, logMonitoringConfiguration
  entries of name, logPattern, expectedStartCutOffInSeconds, expectedRecurringFrequencyInSeconds).
The pod templates inside are checked separately against the Kubernetes PodTemplate schema.

The operator the cluster really runs is older: the pinned dependencies chart deploys training-operator
v1-855e096 (v1.7 development), whose own CRD and validation rules (pytorch_validation.go: replica types, an
image per container, a "pytorch" container, one Master) are checked from the stored upstream CRD in
tests/k8s/test_k8s_job_upstream.py. These v1.9.0 rules are the stricter superset a later chart may bring.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import kubernetes_validate

_CONTAINERS: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "items": {"type": "object", "required": ["name", "image"], "properties": {"image": {"minLength": 1}}},
    "contains": {"properties": {"name": {"const": "pytorch"}}, "required": ["name"]},
}

_TEMPLATE: dict[str, Any] = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "metadata": {"type": "object"},
        "spec": {"type": "object", "required": ["containers"], "properties": {"containers": _CONTAINERS}},
    },
}

_REPLICA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["template"],
    "properties": {
        "replicas": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
        "restartPolicy": {"enum": ["Always", "OnFailure", "Never", "ExitCode"]},
        "template": _TEMPLATE,
    },
}

PYTORCHJOB_SCHEMA: dict[str, Any] = {
    "type": "object",
    # The webhook: "must be configured if elastic policy is used" (a Worker spec).
    "if": {"properties": {"spec": {"required": ["elasticPolicy"]}}},
    "then": {"properties": {"spec": {"properties": {"pytorchReplicaSpecs": {"required": ["Worker"]}}}}},
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "kubeflow.org/v1"},
        "kind": {"const": "PyTorchJob"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["pytorchReplicaSpecs"],
            "properties": {
                "nprocPerNode": {"type": "string"},
                "elasticPolicy": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "minReplicas": {"type": "integer", "minimum": 1},
                        "maxReplicas": {"type": "integer", "minimum": 1},
                        "rdzvBackend": {"enum": ["c10d", "etcd", "etcd-v2"]},
                        "rdzvPort": {"type": "integer"},
                        "rdzvHost": {"type": "string"},
                        "rdzvId": {"type": "string"},
                        "rdzvConf": {"type": "array"},
                        "standalone": {"type": "boolean"},
                        "nProcPerNode": {"type": "integer"},
                        "maxRestarts": {"type": "integer", "minimum": 0},
                        "metrics": {"type": "array"},
                    },
                },
                "runPolicy": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "activeDeadlineSeconds": {"type": "integer"},
                        "backoffLimit": {"type": "integer"},
                        "cleanPodPolicy": {"enum": ["All", "Running", "None"]},
                        "managedBy": {"type": "string"},
                        "schedulingPolicy": {"type": "object"},
                        "suspend": {"type": "boolean"},
                        "ttlSecondsAfterFinished": {"type": "integer"},
                    },
                },
                "pytorchReplicaSpecs": {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": False,
                    "properties": {
                        "Master": {
                            **_REPLICA,
                            "required": ["replicas", "template"],
                            "properties": {**_REPLICA["properties"], "replicas": {"const": 1}},
                        },
                        "Worker": _REPLICA,
                    },
                },
            },
        },
    },
}

HYPERPOD_JOB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "sagemaker.amazonaws.com/v1"},
        "kind": {"const": "HyperPodPyTorchJob"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "required": ["replicaSpecs"],
            "properties": {
                "nprocPerNode": {"type": "string"},
                "replicaSpecs": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["name", "replicas", "template"],
                        "properties": {
                            "name": {"type": "string"},
                            "replicas": {"type": "integer", "minimum": 1},
                            "template": _TEMPLATE,
                        },
                    },
                },
                "runPolicy": {
                    "type": "object",
                    "properties": {
                        "jobMaxRetryCount": {"type": "integer", "minimum": 0},
                        "cleanPodPolicy": {"enum": ["All", "Running", "None"]},
                        "restartPolicy": {
                            "type": "object",
                            "properties": {
                                "numRestartBeforeFullJobRestart": {"type": "integer"},
                                "evalPeriodSeconds": {"type": "integer"},
                                "maxFullJobRestarts": {"type": "integer"},
                            },
                        },
                        "logMonitoringConfiguration": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["name", "logPattern"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "logPattern": {"type": "string", "format": "regex"},
                                    "expectedStartCutOffInSeconds": {"type": "integer", "minimum": 0},
                                    "expectedRecurringFrequencyInSeconds": {"type": "integer", "minimum": 1},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def k8s_validate(manifest: dict[str, Any], version: str) -> None:
    """Validate against the built-in Kubernetes schemas, strict: unknown fields are errors; then the pod names
    the API server checks and the schemas only describe."""
    kubernetes_validate.validate(manifest, f"{version}.0", strict=True)
    problems = list(_pod_name_problems(manifest))
    assert not problems, problems


# A DNS_LABEL (RFC 1123 label): at most 63 characters, lowercase letters, digits and '-', starting and ending
# with a letter or digit (Kubernetes docs, "Object Names and IDs", RFC 1123 Label Names). The schemas say which
# names are one in their descriptions only (v1.35 Container.name: "Name of the container specified as a
# DNS_LABEL. Each container in a pod must have a unique name"; Volume.name: "Must be a DNS_LABEL and unique
# within the pod"; VolumeMount.name: "This must match the Name of a Volume"), so `validate` lets a bad one
# through; the API server refuses it.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _pod_name_problems(node: Any) -> Iterator[str]:
    """Container and volume names that are not DNS labels or not unique, and mounts or podFailurePolicy rules
    naming what the pod does not have (batch/v1 PodFailurePolicyOnExitCodesRequirement.containerName: "it should
    match one the container or initContainer names in the pod template")."""
    if isinstance(node, list):
        for item in node:
            yield from _pod_name_problems(item)
        return
    if not isinstance(node, dict):
        return
    if "containers" in node and isinstance(node["containers"], list):
        containers = [*node["containers"], *node.get("initContainers", [])]
        volumes = [v["name"] for v in node.get("volumes", [])]
        for kind, names in (("container", [c["name"] for c in containers]), ("volume", volumes)):
            yield from (f"{kind} name {n!r} is not a DNS label" for n in names if not _DNS_LABEL.fullmatch(n))
            if len(set(names)) != len(names):
                yield f"{kind} names repeat: {names}"
        for container in containers:
            for mount in container.get("volumeMounts", []):
                if mount["name"] not in volumes:
                    yield f"container {container['name']!r} mounts {mount['name']!r}, which is no volume"
    spec = node.get("spec")
    if isinstance(spec, dict) and "podFailurePolicy" in spec:
        pod = spec["template"]["spec"]
        present = {c["name"] for c in [*pod["containers"], *pod.get("initContainers", [])]}
        for rule in spec["podFailurePolicy"]["rules"]:
            named = rule.get("onExitCodes", {}).get("containerName")
            if named is not None and named not in present:
                yield f"podFailurePolicy names container {named!r}; the pod has {sorted(present)}"
    for value in node.values():
        yield from _pod_name_problems(value)


def pod_templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    specs = job["spec"].get("pytorchReplicaSpecs") or {}
    replicas = list(specs.values()) if specs else job["spec"]["replicaSpecs"]
    return [r["template"] for r in replicas]
