"""config `access`: who administers the compute clusters (EKS access entries) and whether the SSM host is deployed.

Sources: EKS User Guide, "Create access entries" (one principal per entry, never in two; a role's ARN may carry a
path) and the EKS API reference, CreateAccessEntry.principalArn ("You can't use the STS session principal type
with access entries").
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import boto3
import jmespath
import pytest
from moto import mock_aws

from hubspoke.config import load
from tests.config.test_loader import problems
from tests.conftest import minimal, write_config
from tests.docs.checker import command_problems
from tests.docs.shell import parse

ROLE = "arn:aws:iam::123456789012:role/ClusterAdmins"


@pytest.mark.parametrize(
    "arn",
    [
        ROLE,
        "arn:aws:iam::123456789012:role/teams/ml/ClusterAdmins",
        "arn:aws:iam::210987654321:user/jane",
        "arn:aws-us-gov:iam::123456789012:role/ClusterAdmins",
        "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/us-east-2/AWSReservedSSO_Admin_0123abcd",
    ],
)
def test_roles_with_paths_users_and_other_accounts_are_principals(tmp_path: Path, arn: str) -> None:
    config = load(write_config(tmp_path, minimal(access={"administrators": [arn]}))).config
    assert config.access.administrators == [arn]


def test_a_session_arn_is_refused_with_the_role_arn_to_write(tmp_path: Path) -> None:
    """What `aws sts get-caller-identity` prints for an assumed role is a session: EKS refuses it."""
    session = "arn:aws:sts::123456789012:assumed-role/ClusterAdmins/jane"
    [line] = problems(tmp_path, minimal(access={"administrators": [ROLE, session]}))
    assert line.startswith(f"access.administrators[1]: '{session}' is an STS session")
    assert "arn:aws:iam::123456789012:role/<path/>ClusterAdmins" in line
    assert "aws iam get-role --role-name ClusterAdmins" in line


def test_the_printed_get_role_command_prints_the_role_arn_with_its_path(tmp_path: Path) -> None:
    """The refusal's command is one the AWS CLI accepts, and its query answers the ARN, path included.

    botocore's iam 2010-05-08 model: GetRoleResponse has one member, Role, whose shape Role carries Path and Arn;
    `--query` is JMESPath over that response (AWS CLI User Guide, "Filter output": client-side filtering). The
    expected command is written out here, and the query is run against moto's GetRole for a role with a path.
    """
    session = "arn:aws:sts::123456789012:assumed-role/ClusterAdmins/jane"
    [line] = problems(tmp_path, minimal(access={"administrators": [session]}))
    [command] = re.findall(r"`([^`]+)`", line)
    assert command == "aws iam get-role --role-name ClusterAdmins --query Role.Arn"
    assert [p for c in parse(command) for p in command_problems(c)] == []
    with mock_aws():
        iam = boto3.client("iam", region_name="us-east-1")
        iam.create_role(RoleName="ClusterAdmins", Path="/teams/ml/", AssumeRolePolicyDocument="{}")
        answer = iam.get_role(RoleName="ClusterAdmins")
    assert jmespath.search("Role.Arn", answer) == "arn:aws:iam::123456789012:role/teams/ml/ClusterAdmins"
    assert jmespath.search(command.split("--query ")[1], answer) == jmespath.search("Role.Arn", answer)


@pytest.mark.parametrize(
    "arn",
    [
        "ClusterAdmins",
        "arn:aws:iam::12345678901:role/ClusterAdmins",  # eleven digits
        "arn:aws:iam::123456789012:group/admins",  # a group is not a principal
        "arn:aws:iam::123456789012:role/",
    ],
)
def test_anything_else_is_refused_with_an_example(tmp_path: Path, arn: str) -> None:
    [line] = problems(tmp_path, minimal(access={"administrators": [arn]}))
    assert line == (
        f"access.administrators[0]: '{arn}' is not an IAM role or user ARN; write it like "
        "arn:aws:iam::123456789012:role/ClusterAdmins (a role may have a path: "
        "arn:aws:iam::123456789012:role/teams/ml/ClusterAdmins)"
    )


def test_a_principal_listed_twice_is_refused(tmp_path: Path) -> None:
    [line] = problems(tmp_path, minimal(access={"administrators": [ROLE, ROLE]}))
    assert line == f"access: administrators lists {ROLE} more than once: keep one of each"


def test_the_host_follows_the_administrators_unless_written(tmp_path: Path) -> None:
    """README, Configuration: access.access_host defaults to on exactly when administrators are listed."""
    cases = [({}, False), ({"administrators": [ROLE]}, True), ({"access_host": True}, True)]
    cases.append(({"administrators": [ROLE], "access_host": False}, False))
    for access, host in cases:
        config = load(write_config(tmp_path, minimal(access=access))).config
        assert config.access.host_enabled is host, access


@pytest.mark.thorough
def test_validate_exits_2_naming_file_field_and_fix(tmp_path: Path) -> None:
    """Bad input: exit code 2, the file, field and fix on stderr, no traceback."""
    path = write_config(
        tmp_path, minimal(access={"administrators": ["arn:aws:sts::123456789012:assumed-role/A/b"]})
    )
    run = subprocess.run(
        [sys.executable, "-m", "hubspoke.cli.main", "validate", str(path)], capture_output=True, text=True
    )
    assert run.returncode == 2, run.stderr
    assert f"{path}: access.administrators[0]: " in run.stderr + run.stdout
    assert "Traceback" not in run.stderr


def test_the_cdk_deployment_role_is_refused(tmp_path: Path) -> None:
    """EKS gives the cluster's creator (the CDK bootstrap's cfn-exec-role, which CloudFormation uses) an access
    entry of its own (CreateCluster accessConfig.bootstrapClusterCreatorAdminPermissions, default true), and one
    principal cannot have two (EKS User Guide, "Create access entries"): listing it would fail the deploy."""
    creator = "arn:aws:iam::123456789012:role/cdk-hnb659fds-cfn-exec-role-123456789012-us-west-2"
    [line] = problems(tmp_path, minimal(access={"administrators": [ROLE, creator]}))
    assert line.startswith(f"access: administrators lists {creator}, the CDK deployment role")
    assert "remove it" in line
