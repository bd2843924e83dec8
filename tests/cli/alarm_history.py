"""Alarm history for the moto world, as CloudWatch keeps it: moto 5.2.5 has no DescribeAlarmHistory.

CloudWatch's API (botocore cloudwatch service-2.json, DescribeAlarmHistory): AlarmHistoryItems of AlarmName,
AlarmType (MetricAlarm | CompositeAlarm), Timestamp, HistoryItemType (ConfigurationUpdate | StateUpdate | Action),
HistorySummary and HistoryData (JSON), filtered by AlarmName, HistoryItemType, StartDate and EndDate; without
AlarmTypes "only metric alarms are returned"; newest first (ScanBy's default, TimestampDescending).
`AlarmHistory.hook` makes a moto client answer so, with botocore hooks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.awsrequest import AWSResponse

HISTORY_ITEM_TYPES = ("ConfigurationUpdate", "StateUpdate", "Action")


@dataclass
class AlarmHistory:
    """One Region's alarm history items, in the DescribeAlarmHistory AlarmHistoryItem shape."""

    items: list[dict[str, Any]] = field(default_factory=list)

    def failed_action(self, alarm: str, topic: str, at: datetime, *, composite: bool = False) -> None:
        """An SNS action CloudWatch could not execute, worded as the console shows it (tests/cli/
        test_verify_alarm_delivery.py cites where)."""
        error = f"Resource: arn:aws:cloudwatch:::alarm:{alarm} is not authorized to perform: SNS:Publish"
        self.items.append(
            {
                "AlarmName": alarm,
                "AlarmType": "CompositeAlarm" if composite else "MetricAlarm",
                "Timestamp": at,
                "HistoryItemType": "Action",
                "HistorySummary": f'Failed to execute action {topic}. Received error: "{error}"',
                "HistoryData": json.dumps(
                    {"actionState": "Failed", "notificationResource": topic, "error": error}
                ),
            }
        )

    def succeeded_action(self, alarm: str, topic: str, at: datetime) -> None:
        self.items.append(
            {
                "AlarmName": alarm,
                "AlarmType": "MetricAlarm",
                "Timestamp": at,
                "HistoryItemType": "Action",
                "HistorySummary": f"Successfully executed action {topic}",
                "HistoryData": json.dumps({"actionState": "Succeeded", "notificationResource": topic}),
            }
        )

    def hook(self, client: Any) -> None:
        events = client.meta.events
        events.register("before-parameter-build.cloudwatch.DescribeAlarmHistory", self._remember)
        events.register("before-call.cloudwatch.DescribeAlarmHistory", self._describe)

    def _remember(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["hubspoke_params"] = dict(params)

    def _describe(self, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        asked = context.get("hubspoke_params", {})
        kind = asked.get("HistoryItemType")
        if kind is not None and kind not in HISTORY_ITEM_TYPES:
            error = {"Code": "ValidationError", "Message": f"Invalid HistoryItemType {kind}"}
            return AWSResponse("https://stub", 400, {}, None), {"Error": error}
        types = asked.get("AlarmTypes") or ["MetricAlarm"]
        found = [
            item
            for item in self.items
            if item["AlarmType"] in types
            and (kind is None or item["HistoryItemType"] == kind)
            and asked.get("AlarmName") in (None, item["AlarmName"])
            and ("StartDate" not in asked or item["Timestamp"] >= asked["StartDate"])
            and ("EndDate" not in asked or item["Timestamp"] <= asked["EndDate"])
        ]
        found.sort(key=lambda i: i["Timestamp"], reverse=True)
        return AWSResponse("https://stub", 200, {}, None), {"AlarmHistoryItems": found}
