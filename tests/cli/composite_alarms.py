"""Composite alarms for the moto world, as CloudWatch keeps them: moto 5.2.5 has no PutCompositeAlarm, and its
DescribeAlarms returns composite alarms whatever AlarmTypes says.

CloudWatch's API (botocore cloudwatch service-2.json): DescribeAlarms without AlarmTypes returns metric alarms
only, "even if composite alarms ... exist"; with AlarmTypes it returns the kinds listed, composites under
CompositeAlarms with AlarmName, AlarmRule, StateValue, StateReason and StateUpdatedTimestamp. SetAlarmState
and DeleteAlarms take composite alarms as well as metric ones. `CompositeAlarms.hook` makes a moto client
answer so, with botocore hooks, and leaves every metric alarm to moto.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.awsrequest import AWSResponse


@dataclass
class CompositeAlarms:
    """One Region's composite alarms: name -> the DescribeAlarms CompositeAlarm structure."""

    alarms: dict[str, dict[str, Any]] = field(default_factory=dict)

    def put(self, properties: dict[str, Any]) -> None:
        """As PutCompositeAlarm creates one: not yet evaluated (INSUFFICIENT_DATA)."""
        self.alarms[properties["AlarmName"]] = {
            "AlarmName": properties["AlarmName"],
            "AlarmRule": properties["AlarmRule"],
            "StateValue": "INSUFFICIENT_DATA",
            "StateReason": "Unchecked: Initial alarm creation",
            "StateUpdatedTimestamp": datetime.now(UTC),
        }

    def hook(self, client: Any) -> None:
        events = client.meta.events
        # The request's own parameters, kept for the later events (the wire body is CBOR).
        events.register("before-parameter-build.cloudwatch.DescribeAlarms", self._remember)
        events.register("before-parameter-build.cloudwatch.SetAlarmState", self._remember)
        events.register("after-call.cloudwatch.DescribeAlarms", self._describe)
        events.register("before-call.cloudwatch.SetAlarmState", self._set_state)
        events.register("before-parameter-build.cloudwatch.DeleteAlarms", self._delete)

    def _remember(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["hubspoke_params"] = dict(params)

    def _describe(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        asked = context.get("hubspoke_params", {})
        kinds = asked.get("AlarmTypes") or ["MetricAlarm"]
        names = asked.get("AlarmNames")
        if "MetricAlarm" not in kinds:
            parsed["MetricAlarms"] = []
        parsed["CompositeAlarms"] = (
            [a for name, a in self.alarms.items() if names is None or name in names]
            if "CompositeAlarm" in kinds
            else []
        )

    def _set_state(self, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        asked = context.get("hubspoke_params", {})
        alarm = self.alarms.get(asked.get("AlarmName", ""))
        if alarm is None:
            return None  # a metric alarm: moto's
        alarm |= {
            "StateValue": asked["StateValue"],
            "StateReason": asked["StateReason"],
            "StateUpdatedTimestamp": datetime.now(UTC),
        }
        return AWSResponse("https://stub", 200, {}, None), {}

    def _delete(self, params: dict[str, Any], **_: Any) -> None:
        for name in params.get("AlarmNames", []):
            self.alarms.pop(name, None)
