"""`hubspoke init`: write a new environment file from a few answers, with what AWS says about the caller and Regions.

The account comes from STS GetCallerIdentity, the administrator from the caller's role (IAM GetRole gives its ARN
with its path), each Region's image from Canonical's public parameter (as `hubspoke ami`), and the staging folder
per Region is the one `hubspoke stage` fills. The file is validated by hubspoke.config.load before it is written.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from hubspoke.cli.ami import current_images
from hubspoke.cli.checks import CREDENTIALS_FIX, Clients
from hubspoke.cli.envfile import (
    BadInput,
    exists_message,
    profile_clients,
    scalar,
    validate_text,
    with_profile,
    write_new,
)
from hubspoke.cli.output import fail
from hubspoke.cli.preflight.cnq import UBUNTU_PARAMETER, bundled_sdk_version
from hubspoke.config import ConfigError
from hubspoke.config.fields import _region as region_code  # validate's Region check, with its "did you mean"
from hubspoke.regions import REGIONS

# IAM User Guide, "IAM identifiers", IAM ARNs: a role session is arn:<partition>:sts::<account>:assumed-role/
# <role-name>/<session-name> (the role's path is not in it), a user arn:<partition>:iam::<account>:user/<path/>
# <name>, the account's root arn:<partition>:iam::<account>:root.
_ASSUMED_ROLE = re.compile(r"arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/.+")
_USER = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:user/.+")
# The staging prefix of config/dev.yaml; Qumulo's layout puts <version>/qumulo-core.deb under qumulo-core-install/.
STAGING_PREFIX = "cnq/qumulo-core-install/"
# The hub runs only the load Job (1 CPU, 1 GiB: hubspoke/k8s/load.py); the default 2 x ml.p5.48xlarge would idle
# there (issue 44). Why ml.g5.8xlarge and no checks: config/smoke.yaml's header, with its sources.
_HUB_GROUP = [
    "  # Only the dataset load Job runs in the hub, so one small GPU node, no deep health checks (the smallest",
    "  # type hubspoke's lifecycle script allows: config/smoke.yaml's header says why). Training runs in the spokes.",
    "  instance_groups:",
    "    - name: hub-loader",
    "      instance_type: ml.g5.8xlarge",
    "      count: 1",
    "      on_start_deep_health_checks: []",
]
# The address plan of config/dev.yaml: hub 10.10/16, spokes 10.20/16, 10.30/16, ... (preflight checks overlaps).
HUB_CIDR = "10.10.0.0/16"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "init",
        help=summary,
        description="Write config/<environment>.yaml from a few answers (asked for on a terminal when a flag is "
        "missing): the account and administrator role of the caller, each Region's current Ubuntu 24.04 image, "
        "a staging folder per Region for `hubspoke stage`, who hears alarms, the dataset; the hub's cluster one "
        "ml.g5.8xlarge node, for the load Job only. The file is validated before "
        "it is written and never replaces an existing one. Reads AWS only (sts, iam, ssm). Exit 0 when written, "
        "1 when AWS failed, 2 for bad input.",
        epilog="Example:\n  hubspoke init --environment team --hub-region us-east-2 --spoke-region us-west-2 "
        "--alarm-email you@example.com --dataset c4-llama3/v1 --source-bucket my-datasets",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--environment", metavar="NAME", help="short lowercase name, e.g. team")
    parser.add_argument("--hub-region", metavar="REGION", help="where the dataset lives, e.g. us-east-2")
    parser.add_argument(
        "--spoke-region", action="append", metavar="REGION", help="a Region that trains (repeatable)"
    )
    parser.add_argument(
        "--alarm-email", action="append", metavar="ADDRESS", help="who hears alarms (repeatable)"
    )
    parser.add_argument(
        "--no-alarm-recipients",
        action="store_true",
        help="accept, in writing, alarms that notify nobody (ops.alarms_notify_nobody)",
    )
    parser.add_argument(
        "--dataset",
        metavar="NAME/VERSION",
        help="the dataset version jobs read (dataset.name, dataset.version)",
    )
    parser.add_argument(
        "--source-bucket",
        action="append",
        metavar="BUCKET",
        help="a bucket `dataset load` may copy from (dataset.source_buckets; repeatable)",
    )
    parser.add_argument("--hub-cidr", default=HUB_CIDR, metavar="CIDR", help=f"hub VPC (default {HUB_CIDR})")
    parser.add_argument(
        "--spoke-cidr",
        action="append",
        metavar="CIDR",
        help="spoke VPC, one per --spoke-region in order (default 10.20.0.0/16, 10.30.0.0/16, ...)",
    )
    parser.add_argument(
        "--administrator",
        action="append",
        metavar="ARN",
        help="IAM role or user ARN given cluster admin (default: the caller's role, read with iam get-role)",
    )
    parser.add_argument(
        "--output", type=Path, metavar="PATH", help="file to write (default config/<env>.yaml)"
    )
    parser.add_argument(
        "--profile", metavar="NAME", help="AWS profile (default: AWS_PROFILE or the default chain)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would be read and written, only")
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class Answers:
    """What the user chose: names, Regions, address plan and alarm recipients."""

    environment: str
    hub_region: str
    spoke_regions: list[str]
    cidrs: dict[str, str]
    alarm_emails: list[str]
    output: Path
    dataset: tuple[str, str] | None = None
    source_buckets: tuple[str, ...] = ()


def _ask(args: argparse.Namespace, ask: Callable[[str], str] | None) -> Answers:
    """The answers from flags, or from prompts on a terminal; a missing one off a terminal is BadInput."""

    def need(flag: str, prompt: str, example: str) -> str:
        if ask is None:
            raise BadInput(f"{flag} is required (no terminal to ask on); e.g. {flag} {example}")
        answer = ask(f"{prompt}, e.g. {example}: ").strip()
        if not answer:
            raise BadInput(f"{flag}: no answer given")
        return answer

    env = args.environment or need("--environment", "Environment name", "team")
    hub = args.hub_region or need("--hub-region", "Hub Region (where the dataset lives)", "us-east-2")
    spokes = args.spoke_region or need("--spoke-region", "Spoke Regions, comma-separated", "us-west-2").split(
        ","
    )
    spokes = [s.strip() for s in spokes if s.strip()]
    for flag, region in [("--hub-region", hub), *(("--spoke-region", s) for s in spokes)]:
        try:
            region_code(region)
        except ValueError as exc:
            raise BadInput(f"{flag}: {exc}") from None
    unknown = sorted({hub, *spokes} - set(REGIONS))
    if unknown:
        raise BadInput(f"unknown Region code(s) {', '.join(unknown)}; use codes such as us-west-2")
    # One spoke per Region, never the hub's (docs/configuration.md, `.region`).
    twice = sorted({s for s in spokes if spokes.count(s) > 1 or s == hub})
    if twice:
        raise BadInput(f"--spoke-region: {', '.join(twice)} given twice or as the hub; one spoke per Region")
    spoke_cidrs = args.spoke_cidr or [f"10.{20 + 10 * i}.0.0/16" for i in range(len(spokes))]
    if len(spoke_cidrs) != len(spokes):
        raise BadInput(
            f"--spoke-cidr: {len(spoke_cidrs)} given for {len(spokes)} --spoke-region; one each, in order"
        )
    emails = args.alarm_email or []
    if not emails and not args.no_alarm_recipients:
        if ask is None:
            raise BadInput(
                "--alarm-email is required: who is told when an alarm fires (or --no-alarm-recipients to accept, "
                "in writing, alarms that notify nobody)"
            )
        emails = [
            e.strip()
            for e in need("--alarm-email", "Alarm e-mails, comma-separated", "you@example.com").split(",")
        ]
    output = args.output or Path("config") / f"{env}.yaml"
    dataset = None
    if args.dataset is not None:
        name, slash, version = args.dataset.partition("/")
        if not (name and slash and version) or "/" in version:
            raise BadInput(f"--dataset: {args.dataset} is not NAME/VERSION; e.g. --dataset c4-llama3/v1")
        dataset = (name, version)
    return Answers(
        env, hub, spokes, {hub: args.hub_cidr, **dict(zip(spokes, spoke_cidrs, strict=True))}, emails, output,
        dataset, tuple(args.source_bucket or ()),
    )  # fmt: skip


def _refuse_existing(answers: Answers) -> None:
    """Refuse before any AWS call: the file exists, its folder does not, or a sibling has the same environment."""
    out = answers.output
    if out.exists():
        raise BadInput(exists_message(out))
    if not out.parent.is_dir():
        raise BadInput(f"--output: folder {out.parent} does not exist; create it or choose another path")
    import yaml

    # Synth reads every *.yaml of the folder together and refuses two of one environment (load_environments).
    for sibling in sorted(out.parent.glob("*.yaml")):
        try:
            data = yaml.safe_load(sibling.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if isinstance(data, dict) and data.get("environment") == answers.environment:
            raise BadInput(
                f"--environment: {sibling} already holds environment '{answers.environment}'; choose another name"
            )


def _dataset_block(answers: Answers) -> list[str]:
    """The dataset section: what --dataset and --source-bucket said, else a commented example."""
    if answers.dataset is None and not answers.source_buckets:
        return [
            "# The dataset training jobs read (docs/datasets.md); uncomment before the first deploy (the hub's",
            "# Storage stack grants its Shift user read on exactly source_buckets):",
            "# dataset:",
            "#   name: c4-llama3",
            "#   version: v1",
            "#   source_buckets: [my-datasets]",
        ]
    buckets = ", ".join(scalar(b) for b in answers.source_buckets)
    return [
        "# The dataset training jobs read and `hubspoke dataset load` writes (docs/datasets.md); the hub's Storage",
        "# stack grants its Shift user read on exactly source_buckets, so a bucket added later needs a deploy.",
        "dataset:",
        *(
            [f"  name: {scalar(answers.dataset[0])}", f"  version: {scalar(answers.dataset[1])}"]
            if answers.dataset
            else []
        ),
        *([f"  source_buckets: [{buckets}]"] if answers.source_buckets else []),
    ]


def _plan(answers: Answers, profile: str | None) -> list[str]:
    """The AWS CLI equivalent of every read init makes, and the write."""
    regions = [answers.hub_region, *answers.spoke_regions]
    return [
        with_profile(f"aws sts get-caller-identity --region {answers.hub_region}", profile),
        with_profile("aws iam get-role --role-name <role in the caller's ARN> --query Role.Arn", profile)
        + "   # when the caller is a role session",
        *(
            with_profile(
                f"aws ssm get-parameter --name {UBUNTU_PARAMETER} --region {r} --query Parameter.Value "
                "--output text",
                profile,
            )
            for r in regions
        ),
        f"validate, then write {answers.output} (never over an existing file)",
    ]


def administrator_of(caller_arn: str, iam: Any, profile: str | None = None) -> str:
    """The IAM principal behind the caller: a role session's role ARN with its path, or the user's ARN."""
    session = _ASSUMED_ROLE.fullmatch(caller_arn)
    if session:
        role = session.group(3)
        print(with_profile(f"aws iam get-role --role-name {role} --query Role.Arn", profile))
        try:
            # botocore iam 2010-05-08 model: GetRoleResponse.Role.Arn is the role's ARN, Role.Path its path.
            return str(iam.get_role(RoleName=role)["Role"]["Arn"])
        except ClientError as exc:
            raise BadInput(
                f"cannot read role {role} (iam:GetRole answered {exc.response.get('Error', {}).get('Code')}); "
                f'give its ARN: --administrator "$(aws iam get-role --role-name {role} --query Role.Arn '
                '--output text)" with credentials that may read it'
            ) from None
    if _USER.fullmatch(caller_arn):
        return caller_arn
    raise BadInput(
        f"the caller {caller_arn} is neither a role session nor an IAM user (EKS access entries take a role or "
        "user); name the role that should administer the clusters with --administrator ARN"
    )


def _render(
    answers: Answers,
    *,
    account: str,
    administrators: list[str],
    images: dict[str, str],
    caller: str,
    kubernetes: str | None,
) -> str:
    """The environment file: the answers in a commented template."""
    version = bundled_sdk_version()
    today = datetime.now(UTC).date().isoformat()

    def region_block(region: str, indent: str, first: str) -> list[str]:
        bucket = f"hubspoke-{answers.environment}-staging-{account}-{region}"
        compute = [
            *(
                [
                    "  # Stated, so a later hubspoke default never moves this cluster (docs/runbooks/compute.md).",
                    f'  kubernetes_version: "{kubernetes}"',
                ]
                if kubernetes
                else []
            ),
            *(_HUB_GROUP if region == answers.hub_region else []),
        ]
        return [
            f"{first}region: {region}",
            f"{indent}cidr: {scalar(answers.cidrs[region])}",
            *([f"{indent}compute:", *(f"{indent}{line}" for line in compute)] if compute else []),
            f"{indent}storage:",
            f"{indent}  # Canonical's Ubuntu 24.04 image of {today} (`hubspoke ami`): pinned, never looked up at deploy.",
            f"{indent}  ami_id: {scalar(images[region])}",
            f"{indent}  # `hubspoke stage` uploads the release you download from Qumulo Nexus here and pins its",
            f"{indent}  # version (docs/runbooks/qumulo-core.md); {version} is the release hubspoke is tested with.",
            f"{indent}  qumulo_core:",
            f"{indent}    version: {scalar(version)}",
            f"{indent}    install_uri: s3://{bucket}/{STAGING_PREFIX}",
        ]

    spoke_lines = [line for r in answers.spoke_regions for line in region_block(r, "    ", "  - ")]
    emails = ", ".join(scalar(e) for e in answers.alarm_emails)
    ops = (
        [f"  alarm_emails: [{emails}]   # each address confirms SNS's subscription e-mail"]
        if answers.alarm_emails
        else [
            "  # Nobody is told when an alarm fires: replace this with alarm_emails: [you@example.com].",
            "  alarms_notify_nobody: true",
        ]
    )
    return "\n".join(
        [
            f"# Environment {answers.environment}, written by `hubspoke init` on {today} for {caller}.",
            "# docs/configuration.md lists every key and its default; `hubspoke validate <file>` checks this file.",
            f"environment: {scalar(answers.environment)}",
            f'account: "{account}"',
            "# Who may run kubectl on every compute cluster (an EKS access entry each): an IAM role ARN with its",
            "# path (IAM GetRole), not the STS session ARN. Add other roles or users here.",
            "access:",
            "  administrators:",
            *(f"    - {scalar(a)}" for a in administrators),
            "hub:",
            *region_block(answers.hub_region, "  ", "  "),
            "spokes:",
            *spoke_lines,
            *_dataset_block(answers),
            "ops:",
            *ops,
            "",
        ]
    )


def _placeholders(answers: Answers, administrators: list[str] | None) -> dict[str, Any]:
    """What a dry run writes where the real run reads AWS: the caller's account and role, each Region's image."""
    regions = [answers.hub_region, *answers.spoke_regions]
    return dict(
        account="<account>",
        administrators=administrators or ["<the role you are signed in as>"],
        images={r: "<Ubuntu 24.04 image ID>" for r in regions},
        caller="<you>",
    )


def run(
    args: argparse.Namespace, *, clients: Clients | None = None, ask: Callable[[str], str] | None = None
) -> int:
    if ask is None and sys.stdin.isatty():
        ask = input
    try:
        answers = _ask(args, ask)
        _refuse_existing(answers)
        plan = _plan(answers, args.profile)
        if args.dry_run:
            print("\n".join(plan))
            print(f"# {answers.output} would read as follows; AWS gives the values in <angle brackets>:")
            print(_render(answers, **_placeholders(answers, args.administrator), kubernetes=None), end="")
            return 0
        return _run(answers, args, clients or profile_clients(args.profile), plan)
    except BadInput as exc:
        return fail(str(exc))
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2


def _run(answers: Answers, args: argparse.Namespace, clients: Clients, plan: list[str]) -> int:
    hub = answers.hub_region
    print(plan[0])
    try:
        identity = clients("sts", hub).get_caller_identity()
    except NoCredentialsError:
        return fail(f"no AWS credentials: {CREDENTIALS_FIX}")
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        return fail(
            f"sts get-caller-identity in {hub} answered {code}: is {hub} enabled? Else {CREDENTIALS_FIX}"
        )
    except BotoCoreError as exc:
        print(f"hubspoke: cannot reach STS in {hub} ({exc}); check the network", file=sys.stderr)
        return 1
    account, caller = str(identity["Account"]), str(identity["Arn"])
    print(f"  account {account}, caller {caller}")
    if args.administrator:
        administrators = list(args.administrator)
    else:
        administrators = [administrator_of(caller, clients("iam", hub), args.profile)]
    print(f"  administrators: {', '.join(administrators)}")
    regions = [hub, *answers.spoke_regions]
    for line in plan[2:-1]:
        print(line)
    images = current_images(regions, clients)
    for region, image in images.items():
        print(f"  {region}: {image}")
    failed = [f"{r} ({i})" for r, i in images.items() if i.startswith("error")]
    if failed:
        print(
            f"hubspoke: no Ubuntu image read in {'; '.join(failed)}; nothing written, run again",
            file=sys.stderr,
        )
        return 1
    facts: dict[str, Any] = dict(account=account, administrators=administrators, images=images, caller=caller)
    # The Kubernetes version the loader gives a new environment, then stated in the file (as config/dev.yaml does).
    default = validate_text(answers.output, _render(answers, **facts, kubernetes=None))
    kubernetes = default.config.hub.compute.kubernetes_version
    print(plan[-1])
    loaded = write_new(answers.output, _render(answers, **facts, kubernetes=kubernetes))
    for warning in loaded.warnings:
        print(f"{answers.output}: {warning.field}: warning: {warning.message}", file=sys.stderr)
    stage = with_profile(
        f"hubspoke stage --config {answers.output} --version <release> --from <folder>", args.profile
    )
    print(f"wrote {answers.output}; next: download Qumulo Core from Qumulo Nexus, then `{stage}`")
    return 0
