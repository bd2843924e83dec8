"""The dashboard's alarm-status row: every alarm of a Region, by ARN, in that Region's column (issue 42 item 4).

An alarm status widget is the dashboard body's widget of type "alarm" whose properties list alarm ARNs (CloudWatch
User Guide, "Adding an alarm to a dashboard"; aws-cdk-lib AlarmStatusWidget). The expected names are read from the
Ops and Dashboard templates' alarms, not from the code that builds the widget.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.conftest import Templates, properties


def _body(template: dict[str, Any]) -> list[dict[str, Any]]:
    """The dashboard's widgets, with each token in the body (partition, account) written as `<token>`."""
    [(_, dashboard)] = properties(template, "AWS::CloudWatch::Dashboard")
    body = dashboard["DashboardBody"]
    if isinstance(body, dict):
        body = "".join(p if isinstance(p, str) else "<token>" for p in body["Fn::Join"][1])
    return list(json.loads(body)["widgets"])


def test_each_region_shows_the_state_of_every_alarm_it_has(dev_templates: Templates) -> None:
    created: dict[str, set[str]] = {}
    for stack, template in dev_templates.items():
        if stack.startswith(("ops-", "dashboard-")):
            region = stack.split("-", 1)[1]
            for kind in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"):
                created.setdefault(region, set()).update(
                    a["AlarmName"] for _, a in properties(template, kind)
                )
    [dashboard] = [t for s, t in dev_templates.items() if s.startswith("dashboard-")]
    shown: dict[str, set[str]] = {}
    for widget in _body(dashboard):
        if widget["type"] != "alarm":
            continue
        for arn in widget["properties"]["alarms"]:
            found = re.fullmatch(r"arn:[^:]+:cloudwatch:([a-z0-9-]+):[^:]+:alarm:(.+)", arn)
            assert found, arn
            shown.setdefault(found[1], set()).add(found[2])
    assert shown == created
