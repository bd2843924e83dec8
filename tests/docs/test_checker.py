"""The command checker fails on what it exists to catch: each known-bad command below (most taken from the
docs as they were before issue 12) is refused with a reason, and its corrected form passes.

Expected reasons are written from the tools' definitions named in each case, not read back from the checker.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from hubspoke.cli.main import main
from tests.conftest import NETWORK_ONLY, minimal, write_config
from tests.docs.checker import check, command_problems
from tests.docs.markdown import Snippet, snippets
from tests.docs.shell import parse


def _problems(line: str) -> list[str]:
    return [p for command in parse(line) for p in command_problems(command)]


BAD = [
    # botocore sagemaker model: the operation is SearchTrainingPlanOfferings.
    (
        "aws sagemaker search-training-offerings --region us-west-2 --target-resources hyperpod-cluster "
        "--instance-type ml.p5.48xlarge --instance-count 2 --duration-hours 72",
        "search-training-plan-offerings",
    ),
    # botocore: DeleteVolume requires VolumeId; DescribeCluster requires ClusterName.
    ("aws ec2 delete-volume --region us-west-2", "requires --volume-id"),
    ("aws sagemaker describe-cluster --region us-west-2", "requires --cluster-name"),
    ("aws sagemaker describe-cluster-node --region us-west-2 --node-id i-0123", "requires --cluster-name"),
    # A log group lives in one Region (botocore endpoints: logs is regionalized).
    ("aws logs delete-log-group --log-group-name /x", "--region"),
    (
        "aws cloudwatch describe-alarms --region us-west-2 --alarm-name-prefx x",
        "no option --alarm-name-prefx",
    ),
    # awscli/data/cli.json: --output choices.
    ("aws cloudwatch describe-alarms --region us-west-2 --output tabel", "not one of"),
    ("aws logs describe-log-groups --region us-west-2 --query 'logGroups[0'", "not valid JMESPath"),
    # awscli customizations/s3 RbCommand takes one path.
    ("aws s3 rb --force --region us-west-2", "positional"),
    # `logs tail` takes the group as its one positional argument (customizations/logs/tail.py).
    ("aws logs tail --region us-west-2 --since 15m", "positional"),
    # qumulo-api qq: --host is required off a Qumulo node and belongs before the subcommand.
    ("qq fs_fetch_tree --path /dataset", "--host"),
    ("qq --host h fs_fetch_treee --path /dataset", "invalid choice"),
    ("qq fs_fetch_tree --host h --path /dataset", "--host"),
    # hubspoke's own parser.
    ("hubspoke valdate config/dev.yaml", "invalid choice"),
    ("hubspoke render job --config c.yaml --region us-west-2 --kind hyperpd", "invalid choice"),
    ("hubspoke plan", "--config"),
    # The pinned CDK CLI: diff has no --revert-drift (deploy does), and there is no `dif`.
    ("npx cdk diff -c config=config/dev.yaml --revert-drift", "no option --revert-drift"),
    ("npx cdk dif -c config=config/dev.yaml", "not a command"),
    ("npx cdk deploy -c", "needs a value"),
    # kubectl 1.33: the default debug profile is legacy, not privileged.
    ("kubectl debug node/<node> -it --image=busybox -- chroot /host bash", "--profile=sysadmin"),
    ("kubectl -n training get pytorchjobs,jobs", "hyperpodpytorchjobs"),
    # POSIX date has no -d.
    ("date -u -d '-7 days' +%F", "GNU-only"),
    # Guesswork the reader cannot resolve.
    ("hubspoke render job ...", "elides"),
    ("npx cdk bootstrap aws://ACCOUNT/REGION", "looks like a placeholder"),
]

GOOD = [
    "aws sagemaker search-training-plan-offerings --region us-west-2 --target-resources hyperpod-cluster "
    "--instance-type ml.p5.48xlarge --instance-count 2 --duration-hours 72",
    "aws ec2 delete-volume --region us-west-2 --volume-id <volume-id>",
    "aws ec2 modify-instance-attribute --region us-west-2 --instance-id <instance-id> --no-disable-api-termination",
    "aws logs tail <log-group> --region us-west-2 --since 15m",
    "aws eks update-kubeconfig --region us-west-2 --name hubspoke-dev-us-west-2",
    "aws s3 rb s3://<bucket> --force --region us-west-2",
    "aws iam list-roles --query 'Roles[].RoleName'",
    "aws cloudwatch get-metric-statistics --region us-west-2 --namespace N --metric-name M --statistics Sum "
    "--period 60 --start-time $(( $(date +%s) - 1800 )) --end-time $(date +%s)",
    "aws cloudwatch describe-alarms --region us-west-2 --max-items 5 --output table",
    "qq --host $SPOKE fs_fetch_tree --path /dataset",
    "qq --host $SPOKE network_get_interface --interface-id <interface-id>",
    "hubspoke render job --config config/dev.yaml --region us-west-2 --kind hyperpod | kubectl apply -f -",
    "AWS_PROFILE=<profile> hubspoke preflight --config config/dev.yaml --region us-west-2",
    "npx cdk drift -c config=config/dev.yaml hubspoke-dev/link-us-west-2",
    "npx cdk deploy -c config=config/dev.yaml --revert-drift --exclusively hubspoke-dev/link-us-west-2",
    "kubectl debug node/<node> -it --profile=sysadmin --image=busybox -- chroot /host bash",
    "kubectl -n training get pytorchjobs,hyperpodpytorchjobs,jobs",
    "date -u +%FT%TZ",
]


@pytest.mark.parametrize(("line", "reason"), BAD)
def test_a_known_bad_command_is_refused_with_its_reason(line: str, reason: str) -> None:
    problems = _problems(line)
    assert any(reason in p for p in problems), problems


@pytest.mark.parametrize("line", GOOD)
def test_the_corrected_command_passes(line: str) -> None:
    assert _problems(line) == []


def _doc(tmp_path: Path, text: str) -> list[Snippet]:
    path = tmp_path / "page.md"
    path.write_text(text)
    return list(snippets(path))


def test_a_finding_names_file_line_command_and_reason(tmp_path: Path) -> None:
    text = (
        "# Page\n\nSome text.\n\n```sh\necho ok\naws logs delete-log-group \\\n  --log-group-name /x\n```\n"
    )
    report = check(_doc(tmp_path, text), tmp_path)
    assert [str(f) for f in report.findings] == [
        "page.md:7: `aws logs delete-log-group --log-group-name /x`: `aws logs delete-log-group` acts on a "
        "resource in one Region: add --region <region> (or the Region itself)"
    ]


def test_inline_code_is_checked_even_when_it_wraps_across_lines(tmp_path: Path) -> None:
    text = "Run `qq fs_fetch_tree\n--path /dataset` to warm it.\n\nThe `aws` CLI and `npx cdk` are names.\n"
    report = check(_doc(tmp_path, text), tmp_path)
    assert [(f.where, f.command) for f in report.findings] == [
        ("page.md:1", "qq fs_fetch_tree --path /dataset")
    ]
    assert report.checked == {"qq": 1}


def test_placeholders_have_one_style_and_fences_say_what_they_hold(tmp_path: Path) -> None:
    text = "```\nls\n```\n\n```sh\nqq --host <spoke IP> portal_list\nqq --host <spoke-ip> portal_list\n```\n"
    report = check(_doc(tmp_path, text), tmp_path)
    assert [(f.where, f.problem.split(" ")[0]) for f in report.findings] == [
        ("page.md:2", "a"),  # the fence without a language
        ("page.md:6", "placeholder"),
    ]


def test_indented_fences_in_lists_and_yaml_blocks(tmp_path: Path) -> None:
    text = "1. Step:\n   ```sh\n   hubspoke plan\n   ```\n\n```yaml\naws: not a command\n```\n"
    report = check(_doc(tmp_path, text), tmp_path)
    assert [f.where for f in report.findings] == ["page.md:3"]
    assert "--config" in report.findings[0].problem


def test_substitutions_and_pipelines_are_split_into_their_commands() -> None:
    commands = parse(
        'SECRET=$(aws secretsmanager get-secret-value --secret-id "$ARN" \\\n  --query SecretString) && '
        "hubspoke render job --config c.yaml --region r | kubectl apply -f - 2>&1 # done"
    )
    assert [c.argv[0] for c in commands if c.words] == ["aws", "hubspoke", "kubectl"]
    aws = next(c for c in commands if c.words and c.argv[0] == "aws")
    assert aws.words[4].dynamic and aws.argv[-1] == "SecretString"


def test_the_commands_hubspoke_itself_prints_pass_too(tmp_path: Path) -> None:
    """`hubspoke plan` prints bootstrap and deploy commands (a cross-account spoke's with --trust): they go
    through the same checker as the docs."""
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/16", "account": "210987654321", **NETWORK_ONLY}
    path = write_config(tmp_path, minimal(spokes=[spoke]))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", "--config", str(path), "--json"]) == 0
    commands = json.loads(out.getvalue())["commands"]
    printed = [
        *commands["bootstrap"],
        commands["deploy_all"],
        commands["refresh"],
        *commands["deploy_in_order"],
    ]
    assert any("--trust" in c for c in printed)
    assert {c: _problems(c) for c in printed} == {c: [] for c in printed}
