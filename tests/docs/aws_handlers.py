"""Which AWS CLI v2 commands have their argument table changed by a customization, so the checker can refuse a
command whose change it has not transcribed instead of judging it against botocore's model alone.

Source: aws/aws-cli branch v2 at 73fb33bb171ace3e9eaa03308f76e5de50c21393, awscli/handlers_registry.py
PLUGIN_REGISTRY: the `building-argument-table.<service>.<operation>` entries (and `<service>.*`, `*`) of the
services the docs use, by the module under awscli/customizations/ that it loads. Transcribed as data; update it
with the pin.
"""

from __future__ import annotations

from functools import cache

# The services whose customizations are transcribed here: those the docs and hubspoke's printed fixes run (account:
# verify's opt-in Region row; handlers_registry.py names no `account` entry). A command of any other service is
# refused until its entries below are added from the same file.
TRANSCRIBED_SERVICES = frozenset({
    "account", "cloudformation", "cloudwatch", "configure", "ec2", "eks", "iam", "kms", "logs", "resourcegroupstaggingapi",
    "s3", "s3api", "sagemaker", "secretsmanager", "service-quotas", "ssm", "sts",
})  # fmt: skip
# module -> the argument tables of those services it changes ("<cli service>.<cli operation>", "<service>.*", "*").
ARGUMENT_TABLE_HANDLERS: dict[str, tuple[str, ...]] = {
    "argrename": (
        "ec2.*", "ec2.create-image", "eks.create-cluster", "eks.create-nodegroup",
        "eks.update-cluster-components-version", "eks.update-cluster-version", "eks.update-nodegroup-version",
        "sagemaker.delete-image-version", "sagemaker.describe-image-version", "sagemaker.list-aliases",
        "sagemaker.update-image-version",
    ),
    "ec2/addcount": ("ec2.run-instances",),
    "ec2/bundleinstance": ("ec2.bundle-instance",),
    "ec2/decryptpassword": ("ec2.get-password-data",),
    "ec2/runinstances": ("ec2.run-instances",),
    "ec2/secgroupsimplify": (
        "ec2.authorize-security-group-egress", "ec2.authorize-security-group-ingress",
        "ec2.revoke-security-group-egress", "ec2.revoke-security-group-ingress",
    ),
    "iamvirtmfa": ("iam.create-virtual-mfa-device",),
    "putmetricdata": ("cloudwatch.put-metric-data",),
    "s3events": ("s3api.select-object-content",),
    "streamingoutputarg": ("*",),
    "toplevelbool": ("ec2.*",),
}  # fmt: skip


# `building-command-table.<service>` entries of those services: a command name -> "custom" (a hand-written
# command: tests/docs/aws_customizations.py CUSTOM_COMMANDS must define it) or "removed".
COMMAND_TABLE_CHANGES: dict[str, dict[str, str]] = {
    # customizations/cloudformation/__init__.py inject_commands
    "cloudformation": {"package": "custom", "deploy": "custom"},
    # customizations/cloudwatch.py rename_otel_commands: get-o-tel-enrichment (and start-, stop-) become
    # get-otel-enrichment, which is already how the pinned botocore's xform_name spells GetOTelEnrichment.
    "cloudwatch": {},
    # customizations/removals.py
    "ec2": {"import-instance": "removed", "import-volume": "removed"},
    # customizations/eks/__init__.py inject_commands
    "eks": {"update-kubeconfig": "custom", "get-token": "custom"},
    # customizations/removals.py; customizations/logs/__init__.py
    "logs": {"get-log-object": "removed", "tail": "custom", "start-live-tail": "custom"},
    # customizations/sessionmanager.py add_custom_start_session
    "ssm": {"start-session": "custom"},
    # customizations/wizard/commands.py
    "iam": {"wizard": "custom"},
    "configure": {"wizard": "custom"},
}


@cache
def _by_target() -> dict[str, frozenset[str]]:
    targets: dict[str, set[str]] = {}
    for module, keys in ARGUMENT_TABLE_HANDLERS.items():
        for key in keys:
            targets.setdefault(key, set()).add(module)
    return {key: frozenset(modules) for key, modules in targets.items()}


def handlers(service: str, operation: str) -> frozenset[str]:
    """Every customization module that changes the argument table of `aws <service> <operation>`."""
    found = _by_target()
    return (
        found.get(f"{service}.{operation}", frozenset()) | found.get(f"{service}.*", frozenset()) | found["*"]
    )
