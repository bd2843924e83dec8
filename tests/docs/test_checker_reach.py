"""The checker reaches every way a doc can run a checked tool, and judges what the CLIs change on top of their
models: each test gives a bad command (a mutation of a good one) that must be refused with its reason, and
the good one, which must pass. The source of each expected behaviour is in the test's docstring.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.docs.checker import check, command_problems
from tests.docs.markdown import snippets
from tests.docs.shell import parse


def _problems(line: str) -> list[str]:
    return [p for command in parse(line) for p in command_problems(command)]


def _refused(line: str, reason: str) -> None:
    problems = _problems(line)
    assert any(reason in p for p in problems), problems


@pytest.mark.parametrize(
    ("good", "bad", "reason"),
    [
        (
            "sudo -u ops aws ec2 delete-volume --region us-west-2 --volume-id <volume-id>",
            "sudo -u ops aws ec2 delete-volume --region us-west-2",
            "requires --volume-id",
        ),
        (
            "env AWS_PROFILE=<profile> timeout 300 hubspoke preflight --config config/dev.yaml",
            "env AWS_PROFILE=<profile> timeout 300 hubspoke preflight",
            "--config",
        ),
        (
            "nohup nice -n 10 hubspoke validate config/dev.yaml",
            "nohup nice -n 10 hubspoke valdate config/dev.yaml",
            "invalid choice",
        ),
        ("watch -n 30 kubectl -n training get pytorchjobs,hyperpodpytorchjobs", "watch -n 30 kubectl -n training get pytorchjobs", "hyperpodpytorchjobs"),
        (".venv/bin/hubspoke plan --config config/dev.yaml", ".venv/bin/hubspoke plan", "--config"),
        ("exec /usr/local/bin/aws logs tail <log-group> --region us-west-2", "exec /usr/local/bin/aws logs tail <log-group>", "--region"),
        ("npx --yes cdk diff -c config=config/dev.yaml", "npx --yes cdk dif -c config=config/dev.yaml", "not a command"),
    ],
)  # fmt: skip
def test_commands_run_through_a_wrapper_or_a_path_are_checked(good: str, bad: str, reason: str) -> None:
    """sudo(8) `sudo [option ...] command`; GNU coreutils env(1) `env [OPTION]... [NAME=VALUE]... [COMMAND
    [ARG]...]`, timeout(1) `timeout [OPTION] DURATION COMMAND [ARG]...`, nice(1) and nohup(1) `COMMAND
    [ARG]...`; procps-ng watch(1) `watch [options] command`; POSIX shell `exec [command [argument...]]`; a
    command word with a slash runs that file (POSIX Shell Command Language 2.9.1.1); npx runs a package's
    binary, here the CDK CLI's `cdk` (package.json pins aws-cdk)."""
    assert _problems(good) == []
    _refused(bad, reason)


def test_xargs_appends_the_input_unless_told_where_to_put_it() -> None:
    """GNU findutils xargs(1): the command line is the initial arguments followed by items read from standard
    input; with `-I replace-str`, the input replaces replace-str in the initial arguments instead."""
    listed = "aws ec2 describe-volumes --region us-west-2 --query 'Volumes[].VolumeId' --output text"
    assert _problems(f"{listed} | xargs -n 1 aws ec2 delete-volume --region us-west-2 --volume-id") == []
    assert (
        _problems(f"{listed} | xargs -I{{}} aws ec2 delete-volume --region us-west-2 --volume-id {{}}") == []
    )
    _refused(f"{listed} | xargs -I{{}} aws ec2 delete-volume --region us-west-2 --volume-id", "needs a value")


def test_python_dash_m_runs_only_a_module_that_can_be_run() -> None:
    """Python docs, command line `-m`: a package name runs `<pkg>.__main__`, which hubspoke does not have;
    hubspoke/cli/main.py calls main() under `if __name__ == "__main__"`."""
    assert importlib.util.find_spec("hubspoke.__main__") is None
    assert _problems("python3 -m hubspoke.cli.main validate config/dev.yaml") == []
    _refused("python3 -m hubspoke validate config/dev.yaml", "no __main__ module")
    _refused("python -m hubspoke.cli.main valdate config/dev.yaml", "invalid choice")
    assert _problems("python -m pytest -q") == []  # not a checked tool


@pytest.mark.parametrize(
    ("line", "module"),
    [
        # --count replaces --min-count/--max-count (customizations/ec2/addcount.py): botocore's model alone
        # would refuse --count and require the two it replaces.
        ("aws ec2 run-instances --region us-west-2 --image-id <ami-id> --count 1", "ec2/addcount.py"),
        ("aws cloudwatch put-metric-data --region us-west-2 --namespace N --metric-name M --value 1", "putmetricdata.py"),
        # --port, --cidr and their exclusion of --ip-permissions: customizations/ec2/secgroupsimplify.py.
        ("aws ec2 authorize-security-group-ingress --region us-west-2 --group-id <sg-id> --port 2049", "secgroupsimplify.py"),
    ],
)  # fmt: skip
def test_an_operation_a_customization_changes_is_refused_until_transcribed(line: str, module: str) -> None:
    """aws/aws-cli v2 at 73fb33bb171ace3e9eaa03308f76e5de50c21393, awscli/handlers_registry.py: the
    `building-argument-table.<service>.<operation>` entries load these modules, which add, remove or rename
    the operation's options; judging such a command against botocore's model alone would be wrong."""
    _refused(line, module)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "aws cloudformation deploy --region us-west-2 --template-file t.json --stack-name s",
            "hand-written",
        ),
        ("aws ec2 import-volume --region us-west-2", "removed from the AWS CLI"),
        ("aws logs get-log-object --region us-west-2", "removed from the AWS CLI"),
        # Services no page uses (sns has argument renames, lambda commands of its own) are not transcribed.
        ("aws sns subscribe --region us-west-2 --topic-arn <topic-arn> --protocol email", "not transcribed"),
        ("aws lambda list-functions --region us-west-2", "not transcribed"),
        ("aws lambada list-functions --region us-west-2", "not a service of the AWS CLI"),
    ],
)
def test_a_command_table_a_customization_changes_is_judged_by_the_customization(
    line: str, reason: str
) -> None:
    """awscli/handlers_registry.py at the same pin, `building-command-table.<service>`: cloudformation gains
    `package`/`deploy` (customizations/cloudformation/__init__.py), ec2 loses import-instance/import-volume and
    logs loses get-log-object (customizations/removals.py). A service whose entries are not transcribed is
    refused rather than guessed."""
    _refused(line, reason)


def test_what_the_transcribed_customizations_change_is_applied() -> None:
    """Same pin: customizations/toplevelbool.py (ec2's `{Value: boolean}` members become `--x`/`--no-x`),
    argrename.py (`eks.create-cluster.version` -> `--kubernetes-version`), streamingoutputarg.py (a
    streaming output is written to one positional file), clidriver.py (global options before the service),
    cloudwatch.py (get-o-tel-enrichment is renamed get-otel-enrichment, botocore 1.44's own spelling)."""
    assert (
        _problems(
            "aws ec2 modify-instance-attribute --region us-west-2 --instance-id <instance-id> --disable-api-termination"
        )
        == []
    )
    assert _problems("aws eks describe-addon-versions --region us-west-2 --kubernetes-version 1.33") == []
    # After the rename `--version` is only the global flag, so the CLI is left with `1.33` it cannot place.
    _refused(
        "aws eks create-cluster --region us-west-2 --name c --role-arn <role-arn> --resources-vpc-config "
        "subnetIds=<subnet-id> --version 1.33",
        "positional argument",
    )
    assert _problems("aws s3api get-object --region us-west-2 --bucket <bucket> --key <key> <outfile>") == []
    _refused("aws s3api get-object --region us-west-2 --bucket <bucket> --key <key>", "positional")
    assert _problems("aws --region us-west-2 ec2 describe-volumes") == []
    _refused("aws --regoin us-west-2 ec2 describe-volumes", "not a global option")
    assert _problems("aws cloudwatch get-otel-enrichment --region us-west-2") == []
    _refused("aws cloudwatch get-otel-enrichmen --region us-west-2", "not an operation")  # fmt: skip


def test_a_region_must_be_one() -> None:
    """botocore data/endpoints.json lists every Region of every partition (us-west-2 is one, us-west2 is a
    typo); hubspoke's own --region takes any string, so its value is checked the same way."""
    _refused("aws ec2 describe-volumes --region us-west2", "not an AWS Region")
    _refused("aws --region=us-wset-2 ec2 describe-volumes", "not an AWS Region")
    _refused("hubspoke preflight --config config/dev.yaml --region us-west2", "not an AWS Region")
    assert _problems("hubspoke preflight --config config/dev.yaml --region us-west-2") == []
    assert _problems("aws ec2 describe-volumes --region $REGION") == []


def test_choices_of_custom_aws_commands_and_the_cdk_cli() -> None:
    """aws-cli at the pin, customizations/logs/tail.py: `--format` is one of detailed, short, json;
    customizations/s3/subcommands.py TAGS: `--tags` takes a key and a value. `npx cdk deploy --help` of
    aws-cdk 2.1148.1: `--require-approval` [choices: "never", "any-change", "broadening", "destructive"]."""
    _refused("aws logs tail <log-group> --region us-west-2 --format shrt", "not one of")
    assert _problems("aws logs tail <log-group> --region us-west-2 --format short") == []
    _refused("aws s3 mb s3://<bucket> --region us-west-2 --tags team", "needs 2 values")
    assert _problems("aws s3 mb s3://<bucket> --region us-west-2 --tags team ml") == []
    _refused("npx cdk deploy -c config=config/dev.yaml --require-approval nevr", "not one of")
    assert _problems("npx cdk deploy -c config=config/dev.yaml --require-approval never") == []


def test_an_all_capitals_choice_is_a_value_not_a_placeholder() -> None:
    """qumulo-api qumulo/commands/fs.py SetAtimeSettingsCommand: `--granularity` choices HOUR, DAY, WEEK
    (argparse `choices`); any other all-capitals word is a metavariable the reader would have to guess."""
    assert _problems("qq --host <spoke-ip> fs_set_atime_settings --granularity HOUR") == []
    _refused("qq --host <spoke-ip> fs_set_atime_settings --granularity HOURLY", "invalid choice")
    _refused("qq --host <spoke-ip> fs_read_dir --path PATH", "looks like a placeholder")


def test_a_stack_output_the_docs_query_must_exist() -> None:
    """hubspoke/outputs.py names every output (its names are pinned by tests/test_outputs.py); a --query that
    filters on a name no stack outputs reads null (JMESPath) and prints nothing."""
    query = "aws cloudformation describe-stacks --region us-west-2 --stack-name <stack> --query"
    assert _problems(f"{query} \"Stacks[0].Outputs[?OutputKey=='FloatingIps'].OutputValue\"") == []
    assert (
        _problems(f"{query} \"Stacks[0].Outputs[?OutputKey=='PrivateRouteTableUse2Az1'].OutputValue\"") == []
    )
    _refused(f"{query} \"Stacks[0].Outputs[?OutputKey=='FloatingIp'].OutputValue\"", "no hubspoke stack")


def test_console_blocks_and_prompts(tmp_path: Path) -> None:
    """A `console` block is a shell session (Pygments' ShellSessionLexer, which GitHub uses for it): lines
    after a `$ ` prompt are commands, the others are their output; a prompt is not part of the command."""
    page = tmp_path / "page.md"
    page.write_text(
        "```console\n$ hubspoke valdate config/dev.yaml\nusage: hubspoke [-h] ...\n$ aws ec2 describe-volumes \\\n"
        "    --region us-west2\n```\n\nRun `$ hubspoke plan` first.\n"
    )
    report = check(snippets(page), tmp_path)
    found = sorted((f.where, f.problem.split(":")[0]) for f in report.findings)
    assert found == [
        ("page.md:2", "hubspoke"),
        ("page.md:4", "--region us-west2 is not an AWS Region (botocore endpoints.json)"),
        ("page.md:8", "hubspoke"),
    ], report.findings
