"""The rendered jobs against upstream definitions, not our transcription of them.

- PyTorchJob: the CRD the pinned dependencies chart installs (tests/data/pytorchjobs.kubeflow.org-crd-855e096.yaml,
  verbatim, source and commit in its header). The API server prunes fields a structural schema does not
  declare, silently (Kubernetes docs, "Extend the Kubernetes API with CustomResourceDefinitions", "Field
  pruning"), so the check also refuses any field the schema would drop: a misspelt field is an intent lost.
- HyperPodPyTorchJob: hyperpod-pytorch-job-template 1.5.0 (PyPI; AWS's "Versioned JSON-schema + Pydantic
  models for HyperpodPytorchJobOperator", used by the SageMaker HyperPod CLI). Its JSON schema (the newest
  `v<major>_<minor>/schema.json`) validates the job's settings and its Jinja template (`TEMPLATE_CONTENT` in
  that version's template.py) renders the manifest AWS's CLI would submit for them; ours must agree with it
  on every field both set. Both are read as data: the package's Pydantic models import the SageMaker HyperPod
  CLI (`sagemaker.hyperpod`), which is not installed here.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import importlib.resources
import json
import re
from pathlib import Path
from typing import Any

import jinja2
import jsonschema
import pytest
import yaml

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.hyperpod.dependencies import CHART_COMMIT
from hubspoke.k8s.job import training_job
from hubspoke.k8s.run import TRAIN_SCRIPT

CRD_FILE = Path(__file__).resolve().parents[1] / "data" / "pytorchjobs.kubeflow.org-crd-855e096.yaml"
REGIONS = ("us-east-2", "us-west-2")


def _crd_text() -> tuple[str, str]:
    header, _, body = CRD_FILE.read_text().partition("\n---\n")
    return header, "---\n" + body


def _no_pruning(schema: Any) -> Any:
    """The schema with every object that lists its properties closed to others, as pruning would drop them."""
    if isinstance(schema, dict):
        out = {k: _no_pruning(v) for k, v in schema.items()}
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_no_pruning(v) for v in schema]
    return schema


@functools.cache
def _pytorchjob_schema() -> dict[str, Any]:
    crd = yaml.load(_crd_text()[1], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema: dict[str, Any] = _no_pruning(version["schema"]["openAPIV3Schema"])
    # metadata is validated by the API server itself, not by the CRD (its schema here is `type: object`).
    schema["properties"]["metadata"] = {"type": "object"}
    return schema


@functools.cache
def _pytorchjob_validator() -> Any:
    """The schema's validator, the schema checked against its metaschema once: jsonschema.validate does that on
    every call (jsonschema 4.26, validators.py validate: validator_for, then check_schema), which for this CRD
    took most of each test's second."""
    schema = _pytorchjob_schema()
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    return validator(schema)


def test_the_stored_crd_is_the_pinned_charts_file_unchanged() -> None:
    header, body = _crd_text()
    assert CHART_COMMIT in header, "the CRD is the one of the chart commit hubspoke installs"
    declared = re.search(r"sha256 of the upstream file[^:]*: ([0-9a-f]{64})", header)
    assert declared and hashlib.sha256(body.encode()).hexdigest() == declared.group(1)


@pytest.mark.parametrize("code", REGIONS)
def test_pytorchjob_is_valid_under_the_pinned_crd_with_nothing_pruned(
    dev_config: HubSpokeConfig, code: str
) -> None:
    job = training_job(dev_config, dev_config.region_config(code), kind="pytorchjob")
    _pytorchjob_validator().validate(job)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        # The newer operators' spelling moved; at this commit elasticPolicy has nProcPerNode, not nprocPerNode.
        (("spec", "elasticPolicy", "nprocPerNode"), 8),
        (("spec", "elasticPolicy", "maxReplicas"), "2"),
        (("spec", "runPolicy", "backoffLimits"), 3),
    ],
)
def test_the_crd_check_refuses_pruned_or_mistyped_fields(
    dev_config: HubSpokeConfig, path: tuple[str, ...], value: Any
) -> None:
    job = copy.deepcopy(training_job(dev_config, dev_config.hub, kind="pytorchjob"))
    node = job
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        _pytorchjob_validator().validate(job)


def _aws_template() -> tuple[dict[str, Any], str]:
    """The newest schema version's JSON schema and manifest template in hyperpod-pytorch-job-template."""
    package = importlib.resources.files("hyperpod_pytorch_job_template")
    versions = [p for p in package.iterdir() if re.fullmatch(r"v\d+_\d+", p.name)]
    newest = max(versions, key=lambda p: tuple(int(n) for n in p.name[1:].split("_")))
    schema = json.loads((newest / "schema.json").read_text())
    module = ast.parse((newest / "template.py").read_text())
    (template,) = [
        ast.literal_eval(node.value)
        for node in module.body
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["TEMPLATE_CONTENT"]
    ]
    return schema, template


def _hyperpod_container(job: dict[str, Any]) -> dict[str, Any]:
    (replica,) = job["spec"]["replicaSpecs"]
    container: dict[str, Any] = replica["template"]["spec"]["containers"][0]
    return container


@pytest.mark.parametrize("code", REGIONS)
def test_hyperpod_job_agrees_with_aws_job_template(dev_config: HubSpokeConfig, code: str) -> None:
    """The template package's newest schema version validates our settings (job name pattern, counts, env
    names), and the manifest its template renders from them matches ours field by field."""
    region = dev_config.region_config(code)
    job = training_job(dev_config, region, kind="hyperpod")
    (replica,) = job["spec"]["replicaSpecs"]
    container = _hyperpod_container(job)
    command = container["command"]
    split = command.index(TRAIN_SCRIPT)
    schema, template = _aws_template()
    settings: dict[str, Any] = dict(
        job_name=job["metadata"]["name"],
        namespace=job["metadata"]["namespace"],
        image=container["image"],
        pull_policy=container["imagePullPolicy"],
        command=command[:split],
        args=command[split:],
        environment={e["name"]: e["value"] for e in container["env"]},
        instance_type=region.compute.instance_groups[0].instance_type,
        node_count=replica["replicas"],
        tasks_per_node=job["spec"]["nprocPerNode"],
        accelerators=container["resources"]["requests"]["nvidia.com/gpu"],
        accelerators_limit=container["resources"]["limits"]["nvidia.com/gpu"],
        efa=container["resources"]["requests"]["vpc.amazonaws.com/efa"],
        efa_limit=container["resources"]["limits"]["vpc.amazonaws.com/efa"],
        max_retry=job["spec"]["runPolicy"]["jobMaxRetryCount"],
    )
    # Validated without checking the schema itself: it declares `"type": "float"` for its memory fields, which
    # JSON Schema does not know (and which this job does not set).
    jsonschema.Draft202012Validator(schema).validate(settings)
    values = {name: settings.get(name, prop.get("default")) for name, prop in schema["properties"].items()}
    theirs = yaml.safe_load(jinja2.Template(template).render(**values))
    assert (job["apiVersion"], job["kind"]) == (theirs["apiVersion"], theirs["kind"])
    assert job["metadata"]["name"] == theirs["metadata"]["name"]
    assert job["metadata"]["namespace"] == theirs["metadata"]["namespace"]
    assert set(job["spec"]) <= set(theirs["spec"]), "no spec field AWS's template does not know"
    # nprocPerNode is a string in their template (`nprocPerNode: "{{ tasks_per_node }}"`).
    assert job["spec"]["nprocPerNode"] == theirs["spec"]["nprocPerNode"]
    # runPolicy: the retry budget is the field both set (cleanPodPolicy is ours to choose; restartPolicy and
    # logMonitoringConfiguration come from the SageMaker developer guide, which their template does not render).
    assert job["spec"]["runPolicy"]["jobMaxRetryCount"] == theirs["spec"]["runPolicy"]["jobMaxRetryCount"]
    (their_replica,) = theirs["spec"]["replicaSpecs"]
    assert replica["replicas"] == their_replica["replicas"]
    (their_container,) = their_replica["template"]["spec"]["containers"]
    assert command == their_container["command"] + their_container["args"]
    assert container["image"] == their_container["image"]
    for kind in ("requests", "limits"):
        for resource in ("nvidia.com/gpu", "vpc.amazonaws.com/efa"):
            assert int(container["resources"][kind][resource]) == int(
                their_container["resources"][kind][resource]
            )
    assert {e["name"]: e["value"] for e in container["env"]} == {
        e["name"]: str(e["value"]) for e in their_container["env"]
    }
    # Their node selector pins the instance type; ours does the same through required node affinity.
    terms = replica["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    (term,) = terms["nodeSelectorTerms"]
    pinned = {e["key"]: e["values"] for e in term["matchExpressions"]}
    their_type = their_replica["template"]["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"]
    assert pinned["node.kubernetes.io/instance-type"] == [their_type]
    # The GPUs the job asks for are the processes it starts on each node.
    assert int(job["spec"]["nprocPerNode"]) == int(container["resources"]["limits"]["nvidia.com/gpu"])


def test_the_template_check_refuses_what_aws_refuses() -> None:
    """The schema has teeth: a job name its pattern refuses, or a field it does not know, fails."""
    schema, _ = _aws_template()
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate({"job_name": "hubspoke-reference", "image": "x"})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"job_name": "Hubspoke_Reference", "image": "x"})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"job_name": "hubspoke-reference", "image": "x", "gpus_per_node": 8})
