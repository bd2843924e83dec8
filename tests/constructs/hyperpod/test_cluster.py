"""The HyperPod lifecycle bucket's name: the prefix HyperPod's managed policy reads, new for every stack creation.

Sources, written out here: the SageMaker API reference (ClusterLifeCycleConfig.SourceS3Uri, Important) asks for
`s3://sagemaker-`; Amazon S3 bucket naming rules: 3 to 63 characters, lowercase letters, digits, dots and
hyphens, starting and ending with a letter or digit; CloudFormation's AWS::StackId looks like
arn:aws:cloudformation:us-west-2:123456789012:stack/teststack/51af3dc0-da77-11e4-872e-1234567db123 (pseudo
parameters reference), and a re-created stack gets a new one. The bucket is retained, and CloudFormation keeps
a retained resource when it rolls back the create that made it: with one fixed name, the retry would fail.
"""

from __future__ import annotations

import re
from typing import Any

import aws_cdk as cdk

from hubspoke.config import HubSpokeConfig
from hubspoke.constructs.hyperpod.cluster import lifecycle_bucket_name
from hubspoke.regions import REGIONS
from tests.conftest import Templates, resources

S3_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
FIRST_CREATE = (
    "arn:aws:cloudformation:us-west-2:123456789012:stack/teststack/51af3dc0-da77-11e4-872e-1234567db123"
)
RETRY = "arn:aws:cloudformation:us-west-2:123456789012:stack/teststack/0b6e5e40-da80-11e4-9f3b-0a1b2c3d4e5f"


def evaluate(value: Any, stack_id: str) -> Any:
    """What CloudFormation makes of the intrinsic functions a bucket name uses, for a stack with `stack_id`."""
    if isinstance(value, str):
        return value
    [(function, args)] = value.items()
    if function == "Ref":
        assert args == "AWS::StackId", f"the name may depend on the stack ID only, not on {args}"
        return stack_id
    if function == "Fn::Join":
        return args[0].join(evaluate(part, stack_id) for part in args[1])
    if function == "Fn::Split":
        return evaluate(args[1], stack_id).split(args[0])
    if function == "Fn::Select":
        return evaluate(args[1], stack_id)[int(args[0])]
    raise AssertionError(f"unexpected intrinsic {function}")


def _bucket_names(template: dict[str, Any]) -> Any:
    [(_, cluster)] = resources(template, "AWS::SageMaker::Cluster")
    uri = cluster["Properties"]["InstanceGroups"][0]["LifeCycleConfig"]["SourceS3Uri"]
    bucket_id = next(p["Ref"] for p in uri["Fn::Join"][1] if isinstance(p, dict))
    return template["Resources"][bucket_id]["Properties"]["BucketName"]


def test_a_retry_after_a_failed_first_create_gets_a_new_bucket(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    for region in (r for r in dev_config.regions() if r.compute.enabled):
        name = _bucket_names(dev_templates[f"compute-{region.region}"])
        first, retry = evaluate(name, FIRST_CREATE), evaluate(name, RETRY)
        assert first == f"sagemaker-hubspoke-{dev_config.environment}-{region.region}-51af3dc0"
        assert retry != first
        assert S3_BUCKET_NAME.match(first) and S3_BUCKET_NAME.match(retry)


def test_the_longest_cluster_name_still_makes_a_valid_bucket_name() -> None:
    # hubspoke-<environment: at most 16 characters, schema>-<the longest Region code this project knows>
    longest = f"hubspoke-{'e' * 16}-{max(REGIONS, key=len)}"
    stack = cdk.Stack(cdk.App(), "S")
    name = evaluate(stack.resolve(lifecycle_bucket_name(longest)), FIRST_CREATE)
    assert S3_BUCKET_NAME.match(name), f"{name} ({len(name)} characters)"
