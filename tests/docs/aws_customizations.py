"""The AWS CLI v2's own additions to botocore's models, transcribed as facts (names, arity, requiredness).

Source: aws/aws-cli branch v2 at 73fb33bb171ace3e9eaa03308f76e5de50c21393 (2.36.7); each table names its
file. tests/docs/aws_cli.py applies them the way the CLI does. Add a command here, with its file, when the
docs need one that is missing (the checker's message says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

AWS_CLI_SOURCE = "aws/aws-cli@73fb33bb (v2.36.7)"
FLAG, VALUE, OPTIONAL_VALUE, VALUES = "flag", "value", "optional value", "values"

# awscli/data/cli.json "options".
GLOBAL_OPTIONS: dict[str, str] = {
    "debug": FLAG,
    "endpoint-url": VALUE,
    "no-verify-ssl": FLAG,
    "no-paginate": FLAG,
    "output": VALUE,
    "query": VALUE,
    "profile": VALUE,
    "region": VALUE,
    "version": FLAG,
    "color": VALUE,
    "no-sign-request": FLAG,
    "ca-bundle": VALUE,
    "cli-read-timeout": VALUE,
    "cli-connect-timeout": VALUE,
    "cli-binary-format": VALUE,
    "no-cli-pager": FLAG,
    "cli-auto-prompt": FLAG,
    "no-cli-auto-prompt": FLAG,
    "cli-error-format": VALUE,
}
OUTPUT_CHOICES = ("json", "text", "table", "yaml", "yaml-stream", "off")
# awscli/handlers_registry.py MAIN_COMMAND_TABLE_OPS (RENAME): botocore service name -> CLI command.
SERVICE_RENAMES = {"s3": "s3api", "codedeploy": "deploy", "config": "configservice"}
# customizations/argrename.py ARGUMENT_RENAMES, for the services the docs use (add others with the same source).
ARGUMENT_RENAMES = {
    "ec2.create-image.no-no-reboot": "reboot",
    "ec2.*.no-egress": "ingress",
    "ec2.*.no-disable-api-termination": "enable-api-termination",
    "eks.create-cluster.version": "kubernetes-version",
    "eks.update-cluster-version.version": "kubernetes-version",
    "eks.create-nodegroup.version": "kubernetes-version",
    "eks.update-nodegroup-version.version": "kubernetes-version",
    "sagemaker.delete-image-version.version": "version-number",
    "sagemaker.describe-image-version.version": "version-number",
    "sagemaker.list-aliases.version": "version-number",
    "sagemaker.update-image-version.version": "version-number",
}
CLI_INPUT_OPTIONS = {
    "cli-input-json": VALUE,
    "cli-input-yaml": VALUE,
    "generate-cli-skeleton": OPTIONAL_VALUE,
}
PAGING_OPTIONS = {"starting-token": VALUE, "max-items": VALUE}


@dataclass(frozen=True)
class ArgTable:
    """What one command accepts: option -> kind, required options, positional arguments (min, max)."""

    options: dict[str, str]
    required: frozenset[str] = frozenset()
    positionals: tuple[int, int] = (0, 0)
    source: str = ""
    takes_cli_input: bool = False
    regional: bool = True  # acts on something in one Region (so a documented command must name it)
    output_shape: Any = None  # botocore's output shape, for checking --query (modelled operations only)


def _s3_transfer(*extra: str) -> dict[str, str]:
    # customizations/s3/subcommands.py TRANSFER_ARGS and the per-command additions.
    flags = [
        "dryrun",
        "quiet",
        "follow-symlinks",
        "no-follow-symlinks",
        "no-guess-mime-type",
        "only-show-errors",
        "no-progress",
        "progress-multiline",
        "ignore-glacier-warnings",
        "force-glacier-transfer",
    ]
    values = [
        "include",
        "exclude",
        "acl",
        "sse-c-key",
        "sse-kms-key-id",
        "sse-c-copy-source-key",
        "storage-class",
        "website-redirect",
        "content-type",
        "cache-control",
        "content-disposition",
        "content-encoding",
        "content-language",
        "expires",
        "source-region",
        "progress-frequency",
        "page-size",
        "checksum-mode",
        "checksum-algorithm",
        "metadata",
        "copy-props",
        "metadata-directive",
        "case-conflict",
    ]
    table = {name: FLAG for name in flags} | {name: VALUE for name in values}
    table |= {"sse": OPTIONAL_VALUE, "sse-c": OPTIONAL_VALUE, "sse-c-copy-source": OPTIONAL_VALUE}
    table |= {"request-payer": OPTIONAL_VALUE, "grants": VALUES, "no-overwrite": FLAG}
    for name in extra:
        table[name] = VALUE if name == "expected-size" else FLAG
    return table


_S3 = "awscli/customizations/s3/subcommands.py"
CUSTOM_COMMANDS: dict[tuple[str, str], ArgTable] = {
    ("s3", "ls"): ArgTable(
        {
            "recursive": FLAG,
            "page-size": VALUE,
            "human-readable": FLAG,
            "summarize": FLAG,
            "request-payer": OPTIONAL_VALUE,
            "bucket-name-prefix": VALUE,
            "bucket-region": VALUE,
        },
        positionals=(0, 1),
        source=f"{_S3} ListCommand",
    ),
    ("s3", "cp"): ArgTable(
        _s3_transfer("recursive", "expected-size"), positionals=(2, 2), source=f"{_S3} CpCommand"
    ),
    ("s3", "mv"): ArgTable(
        _s3_transfer("recursive", "validate-same-s3-paths"), positionals=(2, 2), source=f"{_S3} MvCommand"
    ),
    # --delete, --size-only, --exact-timestamps: customizations/s3/syncstrategy/*.py ARGUMENT entries.
    ("s3", "sync"): ArgTable(
        _s3_transfer("delete", "size-only", "exact-timestamps"),
        positionals=(2, 2),
        source=f"{_S3} SyncCommand",
    ),
    ("s3", "rm"): ArgTable(
        {
            "dryrun": FLAG,
            "quiet": FLAG,
            "recursive": FLAG,
            "request-payer": OPTIONAL_VALUE,
            "include": VALUE,
            "exclude": VALUE,
            "only-show-errors": FLAG,
            "page-size": VALUE,
        },
        positionals=(1, 1),
        source=f"{_S3} RmCommand",
    ),
    ("s3", "mb"): ArgTable({"tags": VALUES}, positionals=(1, 1), source=f"{_S3} MbCommand"),
    ("s3", "rb"): ArgTable({"force": FLAG}, positionals=(1, 1), source=f"{_S3} RbCommand"),
    ("eks", "update-kubeconfig"): ArgTable(
        {
            "name": VALUE,
            "kubeconfig": VALUE,
            "role-arn": VALUE,
            "proxy-url": VALUE,
            "dry-run": FLAG,
            "verbose": FLAG,
            "alias": VALUE,
            "user-alias": VALUE,
            "assume-role-arn": VALUE,
        },
        required=frozenset({"name"}),
        source="awscli/customizations/eks/update_kubeconfig.py",
    ),
    ("eks", "get-token"): ArgTable(
        {"cluster-name": VALUE, "role-arn": VALUE, "cluster-id": VALUE},
        source="awscli/customizations/eks/get_token.py",
    ),
    ("logs", "tail"): ArgTable(
        {
            "since": VALUE,
            "follow": FLAG,
            "format": VALUE,
            "filter-pattern": VALUE,
            "log-stream-names": VALUES,
            "log-stream-name-prefix": VALUE,
        },
        positionals=(1, 1),
        source="awscli/customizations/logs/tail.py TailCommand (v2 only)",
    ),
    # Reads the local configuration files only.
    ("configure", "list-profiles"): ArgTable(
        {}, source="awscli/customizations/configure/listprofiles.py", regional=False
    ),
}
