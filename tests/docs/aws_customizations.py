"""The AWS CLI v2's own additions to botocore's models, transcribed as facts (names, arity, choices,
requiredness).

Source: aws/aws-cli branch v2 at 73fb33bb171ace3e9eaa03308f76e5de50c21393 (2.36.7); each table names its
file. tests/docs/aws_cli.py applies them the way the CLI does. Add a command here, with its file, when the
docs need one that is missing (the checker's message says so); tests/docs/aws_handlers.py lists every
customization that changes an operation's argument table, and the checker refuses an operation whose
customization is not in TRANSCRIBED_HANDLERS.
"""

from __future__ import annotations

from dataclasses import dataclass

AWS_CLI_SOURCE = "aws/aws-cli@73fb33bb (v2.36.7)"


@dataclass(frozen=True)
class Opt:
    """How an option takes values, as argparse would: `nargs` 0 (a flag), 1, 2, "?" (optional), "*" or "+";
    and the `choices` it is restricted to (empty: any)."""

    nargs: int | str = 1
    choices: tuple[str, ...] = ()


FLAG, VALUE, OPTIONAL_VALUE, VALUES = Opt(0), Opt(1), Opt("?"), Opt("*")

# awscli/data/cli.json "options" (choices and store_true/store_false actions as given there).
GLOBAL_OPTIONS: dict[str, Opt] = {
    "debug": FLAG,
    "endpoint-url": VALUE,
    "no-verify-ssl": FLAG,
    "no-paginate": FLAG,
    "output": Opt(choices=("json", "text", "table", "yaml", "yaml-stream", "off")),
    "query": VALUE,
    "profile": VALUE,
    "region": VALUE,
    "version": FLAG,
    "color": Opt(choices=("on", "off", "auto")),
    "no-sign-request": FLAG,
    "ca-bundle": VALUE,
    "cli-read-timeout": VALUE,
    "cli-connect-timeout": VALUE,
    "cli-binary-format": Opt(choices=("base64", "raw-in-base64-out")),
    "no-cli-pager": FLAG,
    "cli-auto-prompt": FLAG,
    "no-cli-auto-prompt": FLAG,
    "cli-error-format": Opt(choices=("legacy", "json", "yaml", "text", "table", "enhanced")),
}
# awscli/handlers_registry.py MAIN_COMMAND_TABLE_OPS (RENAME): botocore service name -> CLI command.
SERVICE_RENAMES = {"s3": "s3api", "codedeploy": "deploy", "config": "configservice"}
# customizations/argrename.py ARGUMENT_RENAMES and HIDDEN_ALIASES: every entry of the services the docs use.
ARGUMENT_RENAMES = {
    "ec2.create-image.no-no-reboot": "reboot",
    "ec2.*.no-egress": "ingress",
    "ec2.*.no-disable-api-termination": "enable-api-termination",
    "eks.create-cluster.version": "kubernetes-version",
    "eks.update-cluster-version.version": "kubernetes-version",
    "eks.create-nodegroup.version": "kubernetes-version",
    "eks.update-nodegroup-version.version": "kubernetes-version",
    "eks.update-cluster-components-version.version": "kubernetes-version",
    "sagemaker.delete-image-version.version": "version-number",
    "sagemaker.describe-image-version.version": "version-number",
    "sagemaker.list-aliases.version": "version-number",
    "sagemaker.update-image-version.version": "version-number",
}
# customizations/cliinput.py, generatecliskeleton.py (every operation: handlers_registry `building-argument-table`).
CLI_INPUT_OPTIONS = {
    "cli-input-json": VALUE,
    "cli-input-yaml": VALUE,
    "generate-cli-skeleton": Opt("?", choices=("input", "yaml-input", "output")),
}
PAGING_OPTIONS = {"starting-token": VALUE, "max-items": VALUE}  # customizations/paginate.py


@dataclass(frozen=True)
class ArgTable:
    """What one command accepts: option -> Opt, required options, positional arguments (min, max)."""

    options: dict[str, Opt]
    required: frozenset[str] = frozenset()
    positionals: tuple[int, int] = (0, 0)
    source: str = ""
    takes_cli_input: bool = False
    regional: bool = True  # acts on something in one Region (so a documented command must name it)


# Applied in aws_cli.arg_table: argrename and toplevelbool for every operation of their services,
# streamingoutputarg's output-file positional. Any other module named by aws_handlers.py makes the checker
# refuse the operation until it is transcribed (only what the docs use is: ec2/secgroupsimplify is not).
TRANSCRIBED_HANDLERS = frozenset({"argrename", "toplevelbool", "streamingoutputarg"})


# customizations/s3/subcommands.py: the argument dictionaries (name, nargs, action, choices) of the commands the
# docs use (the others are refused until added).
_S3 = "awscli/customizations/s3/subcommands.py"
_REQUEST_PAYER = Opt("?", choices=("requester",))
_FILTER = Opt(1)  # --include/--exclude: nargs 1, action AppendFilter
_TRANSFER: dict[str, Opt] = {  # TRANSFER_ARGS
    "dryrun": FLAG,
    "quiet": FLAG,
    "include": _FILTER,
    "exclude": _FILTER,
    "acl": Opt(
        choices=(
            "private",
            "public-read",
            "public-read-write",
            "authenticated-read",
            "aws-exec-read",
            "bucket-owner-read",
            "bucket-owner-full-control",
            "log-delivery-write",
        )
    ),
    "follow-symlinks": FLAG,
    "no-follow-symlinks": FLAG,
    "no-guess-mime-type": FLAG,
    "sse": Opt("?", choices=("AES256", "aws:kms")),
    "sse-c": Opt("?", choices=("AES256",)),
    "sse-c-key": VALUE,
    "sse-kms-key-id": VALUE,
    "sse-c-copy-source": Opt("?", choices=("AES256",)),
    "sse-c-copy-source-key": VALUE,
    "storage-class": Opt(
        choices=(
            "STANDARD",
            "REDUCED_REDUNDANCY",
            "STANDARD_IA",
            "ONEZONE_IA",
            "INTELLIGENT_TIERING",
            "GLACIER",
            "DEEP_ARCHIVE",
            "GLACIER_IR",
        )
    ),
    "grants": Opt("+"),
    "website-redirect": VALUE,
    "content-type": VALUE,
    "cache-control": VALUE,
    "content-disposition": VALUE,
    "content-encoding": VALUE,
    "content-language": VALUE,
    "expires": VALUE,
    "source-region": VALUE,
    "only-show-errors": FLAG,
    "no-progress": FLAG,
    "progress-frequency": VALUE,
    "progress-multiline": FLAG,
    "page-size": VALUE,
    "ignore-glacier-warnings": FLAG,
    "force-glacier-transfer": FLAG,
    "request-payer": _REQUEST_PAYER,
    "checksum-mode": Opt(choices=("ENABLED",)),
    "checksum-algorithm": Opt(
        choices=(
            "CRC64NVME",
            "CRC32",
            "SHA256",
            "SHA1",
            "CRC32C",
            "SHA512",
            "XXHASH64",
            "XXHASH3",
            "XXHASH128",
        )
    ),
}
_COPY = {  # METADATA, COPY_PROPS, METADATA_DIRECTIVE, CASE_CONFLICT, NO_OVERWRITE
    "metadata": VALUE,
    "copy-props": Opt(choices=("none", "metadata-directive", "default", "all")),
    "metadata-directive": Opt(choices=("COPY", "REPLACE")),
    "case-conflict": Opt(choices=("ignore", "skip", "warn", "error")),
    "no-overwrite": FLAG,
}
CUSTOM_COMMANDS: dict[tuple[str, str], ArgTable] = {
    ("s3", "cp"): ArgTable(
        _TRANSFER | _COPY | {"expected-size": VALUE, "recursive": FLAG},
        positionals=(2, 2),
        source=f"{_S3} CpCommand",
    ),
    # TAGS: `--tags <key> <value>`, nargs 2, action append.
    ("s3", "mb"): ArgTable({"tags": Opt(2)}, positionals=(1, 1), source=f"{_S3} MbCommand"),
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
    # StartSessionCommand is a ServiceOperation over botocore's ssm StartSession model (Target required;
    # DocumentName, Reason, Parameters); only the caller changes, handing the session to the plugin (read at
    # aws/aws-cli@04f64fc0, the same add_custom_start_session the pin registers in handlers_registry.py).
    ("ssm", "start-session"): ArgTable(
        {"target": VALUE, "document-name": VALUE, "reason": VALUE, "parameters": VALUE},
        required=frozenset({"target"}),
        source="awscli/customizations/sessionmanager.py StartSessionCommand",
    ),
    ("logs", "tail"): ArgTable(
        {
            "since": VALUE,
            "follow": FLAG,
            "format": Opt(choices=("detailed", "short", "json")),
            "filter-pattern": VALUE,
            "log-stream-names": Opt("+"),
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
