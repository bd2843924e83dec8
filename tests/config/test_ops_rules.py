"""Alarm recipients: a config whose alarms reach nobody is refused with the fix, unless the file says so.

Sources: hubspoke's alarms live in the hub's Dashboard stack when the hub trains and in every caching spoke's
Ops stack (docs/operations.md, "Alarms"); an SNS topic ARN is arn:PARTITION:sns:REGION:ACCOUNT:NAME (SNS
Developer Guide, "Amazon SNS resource ARNs"). That an alarm publishes only to a topic of its own Region is
ASSUMED (docs/operations.md, "Who is told"), and enforced here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hubspoke.config import load
from tests.config.test_loader import problems
from tests.conftest import ROOT, minimal, write_config

EAST = "arn:aws:sns:us-east-2:111122223333:on-call"
WEST = "arn:aws:sns:us-west-2:111122223333:on-call"


def _with_ops(**ops: Any) -> dict[str, Any]:
    data = minimal()
    data["ops"] = ops  # replaces the opt-out minimal() writes for tests that name nobody
    return data


def test_alarms_that_reach_nobody_are_refused_with_every_fix(tmp_path: Path) -> None:
    assert problems(tmp_path, _with_ops()) == [
        "ops.alarm_emails: the alarms of us-east-2, us-west-2 notify nobody: add an address here, or an SNS "
        "topic ARN of that Region to ops.alarm_topic_arns (an on-call or chat integration), or write "
        "ops.alarms_notify_nobody: true to accept that nobody is told"
    ]


def test_the_command_line_exits_2_naming_file_field_and_fix(tmp_path: Path) -> None:
    path = write_config(tmp_path, _with_ops())
    done = subprocess.run(
        [sys.executable, "-m", "hubspoke.cli.main", "validate", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 2
    assert (
        done.stderr.startswith(f"{path}: ops.alarm_emails: ") and "alarms_notify_nobody: true" in done.stderr
    )
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "ops",
    [
        {"alarm_emails": ["ops@example.com"]},
        {"alarm_topic_arns": [EAST, WEST]},
        {"alarms_notify_nobody": True},
    ],
)
def test_an_address_a_topic_per_region_or_the_written_opt_out_passes(
    tmp_path: Path, ops: dict[str, Any]
) -> None:
    assert load(write_config(tmp_path, _with_ops(**ops))).config.ops.model_dump()["alarms_notify_nobody"] is (
        ops.get("alarms_notify_nobody", False)
    )


def test_topics_must_cover_every_region_with_alarms(tmp_path: Path) -> None:
    assert problems(tmp_path, _with_ops(alarm_topic_arns=[EAST])) == [
        "ops.alarm_topic_arns: no topic in us-west-2 (spokes[0]), so its alarms notify nobody: alarms publish to "
        "topics of their own Region; add a topic ARN of us-west-2 or an address to ops.alarm_emails"
    ]


def test_opt_out_beside_recipients_is_a_contradiction(tmp_path: Path) -> None:
    assert problems(tmp_path, _with_ops(alarm_emails=["ops@example.com"], alarms_notify_nobody=True)) == [
        "ops.alarms_notify_nobody: true, yet ops.alarm_emails or ops.alarm_topic_arns name recipients: remove "
        "the opt-out (the recipients are told) or the recipients"
    ]


def test_a_topic_arn_that_is_not_one_is_refused(tmp_path: Path) -> None:
    lines = problems(tmp_path, _with_ops(alarm_topic_arns=["arn:aws:sqs:us-west-2:111122223333:queue"]))
    assert any(
        line.startswith(
            "ops.alarm_topic_arns[0]: 'arn:aws:sqs:us-west-2:111122223333:queue' is not valid here; write existing SNS topics"
        )
        for line in lines
    ), lines


def test_an_environment_without_alarms_needs_no_recipient(tmp_path: Path) -> None:
    # No compute in the hub and no caching spoke: no Dashboard alarms, no Ops stack.
    data = _with_ops()
    data["hub"]["compute"] = {"enabled": False}
    data["spokes"][0]["storage"] = {"enabled": False}
    data["spokes"][0]["compute"] = {"enabled": False}
    load(write_config(tmp_path, data))


def test_dev_config_opts_out_in_writing() -> None:
    """config/dev.yaml is deployed by users: it says, in the file, that nobody is told (and how to change it)."""
    text = (ROOT / "config" / "dev.yaml").read_text()
    assert "alarms_notify_nobody: true" in text and "alarm_emails:" in text
    assert load(ROOT / "config" / "dev.yaml").config.ops.alarms_notify_nobody is True


def _west_topics(count: int) -> list[str]:
    return [f"arn:aws:sns:us-west-2:111122223333:on-call-{i}" for i in range(count)]


def test_more_actions_per_alarm_state_than_cloudwatch_accepts_are_refused(tmp_path: Path) -> None:
    """CloudWatch takes at most 5 ARNs in an alarm's AlarmActions and in its OKActions (CloudWatch API Reference,
    PutMetricAlarm / PutCompositeAlarm: "Array Members: Maximum number of 5 items"). Each alarm also publishes to
    its stack's own topic, so 5 topics of one Region make 6 actions per state: the deploy would fail."""
    data = _with_ops(alarm_emails=["ops@example.com"], alarm_topic_arns=[EAST, *_west_topics(5)])
    assert problems(tmp_path, data) == [
        "ops.alarm_topic_arns[5]: 5 topics of us-west-2 (spokes[0]) plus the stack's own alarm topic make 6 "
        "actions per alarm state, and CloudWatch accepts at most 5 (PutMetricAlarm AlarmActions, OKActions), "
        "so the deploy fails: keep at most 4 topics of us-west-2, or subscribe the other endpoints to one of them"
    ]


def test_four_topics_of_a_region_fit_beside_the_stacks_own(tmp_path: Path) -> None:
    data = _with_ops(alarm_emails=["ops@example.com"], alarm_topic_arns=[EAST, *_west_topics(4)])
    assert load(write_config(tmp_path, data)).config.ops.alarm_topic_arns[1:] == _west_topics(4)
