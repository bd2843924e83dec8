"""Every Ops stack's flow-log metric filters, in every topology shape, fit CloudWatch's limits and count only
accepted traffic (secondary CIDRs make more and longer patterns than config/dev.yaml's one /16 per side)."""

from __future__ import annotations

import botocore.session

from tests.conftest import Shape, properties


def _pattern_limit() -> int:
    """CloudWatch Logs PutMetricFilter `filterPattern` maximum length, from botocore's service model."""
    model = botocore.session.get_session().get_service_model("logs")
    return int(model.operation_model("PutMetricFilter").input_shape.members["filterPattern"].metadata["max"])


def test_every_filter_pattern_fits_and_counts_accepted_records(shape: Shape) -> None:
    limit = _pattern_limit()
    for sid in (s for s in shape.templates if s.startswith("ops-")):
        filters = [f for _, f in properties(shape.templates[sid], "AWS::Logs::MetricFilter")]
        assert filters, sid
        for f in filters:
            assert len(f["FilterPattern"]) <= limit, (sid, len(f["FilterPattern"]))
            assert 'action="ACCEPT"' in f["FilterPattern"], "rejected traffic moved no data"
            [transform] = f["MetricTransformations"]
            assert transform["MetricValue"] == "$bytes" and transform["DefaultValue"] == 0
