"""The composite-alarm stand-in answers as CloudWatch does (botocore cloudwatch service-2.json): DescribeAlarms
returns metric alarms only unless AlarmTypes asks for composites, only composites when it asks for them alone;
SetAlarmState and DeleteAlarms reach a composite alarm; a name that exists nowhere is still refused."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from tests.cli.composite_alarms import CompositeAlarms


def test_describe_set_and_delete_follow_cloudwatch() -> None:
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-west-2")
        composites = CompositeAlarms()
        composites.hook(cloudwatch)
        cloudwatch.put_metric_alarm(
            AlarmName="m", Namespace="N", MetricName="M", Statistic="Sum", Period=60, EvaluationPeriods=1,
            Threshold=1, ComparisonOperator="LessThanThreshold",
        )  # fmt: skip
        composites.put({"AlarmName": "c", "AlarmRule": 'ALARM("m")'})

        def names(**params: object) -> tuple[list[str], list[str]]:
            found = cloudwatch.describe_alarms(AlarmNames=["m", "c"], **params)
            return [a["AlarmName"] for a in found["MetricAlarms"]], [
                a["AlarmName"] for a in found.get("CompositeAlarms", [])
            ]

        assert names() == (["m"], [])
        assert names(AlarmTypes=["CompositeAlarm"]) == ([], ["c"])
        assert names(AlarmTypes=["MetricAlarm", "CompositeAlarm"]) == (["m"], ["c"])

        cloudwatch.set_alarm_state(AlarmName="c", StateValue="ALARM", StateReason="both inputs in ALARM")
        (composite,) = cloudwatch.describe_alarms(AlarmTypes=["CompositeAlarm"])["CompositeAlarms"]
        assert (composite["StateValue"], composite["StateReason"]) == ("ALARM", "both inputs in ALARM")
        with pytest.raises(ClientError, match="ResourceNotFound"):
            cloudwatch.set_alarm_state(AlarmName="nowhere", StateValue="OK", StateReason="x")

        cloudwatch.delete_alarms(AlarmNames=["c"])
        assert names(AlarmTypes=["MetricAlarm", "CompositeAlarm"]) == (["m"], [])
