"""The filter-pattern fake agrees with every documented example before it is trusted with ours.

Examples: CloudWatch Logs User Guide (awsdocs/amazon-cloudwatch-logs-user-guide@26c12c3,
doc_source/FilterAndPatternSyntax.md, space-delimited section) and the VPC User Guide's flow-log pattern and
record examples (awsdocs/amazon-vpc-user-guide@a16ab76, doc_source/flow-logs-cwl.md and
flow-logs-records-examples.md), copied as data.
"""

from __future__ import annotations

import pytest

from tests.fakes.cloudwatch_filter import event_fields, match

APACHE = '127.0.0.1 Prod frank [10/Oct/2000:13:25:15 -0700] "GET /index.html HTTP/1.0" 404 1534'


def test_the_documented_seven_field_example_extracts_the_documented_values() -> None:
    found = match("[ip, user, username, timestamp, request =*.html*, status_code = 4*, bytes]", APACHE)
    assert found == {
        "$bytes": "1534",
        "$status_code": "404",
        "$request": "GET /index.html HTTP/1.0",
        "$timestamp": "10/Oct/2000:13:25:15 -0700",
        "$username": "frank",
        "$user": "Prod",
        "$ip": "127.0.0.1",
    }


def test_ellipsis_stands_for_the_unnamed_leading_fields() -> None:
    assert match("[..., request =*.html*, status_code = 4*, bytes]", APACHE) is not None


@pytest.mark.parametrize(("status", "matched"), [("404", True), ("410", True), ("200", False)])
def test_or_between_conditions_of_one_field(status: str, matched: bool) -> None:
    pattern = (
        "[ip, user, username, timestamp, request =*.html*, status_code = 404 || status_code = 410, bytes]"
    )
    assert (match(pattern, APACHE.replace(" 404 ", f" {status} ")) is not None) is matched


def test_wildcards_match_the_whole_field() -> None:
    pattern = "[ip, user, username, timestamp, request =*.html*, status_code = 4*, bytes]"
    assert match(pattern, APACHE.replace("index.html", "index.php")) is None
    assert match(pattern, APACHE.replace(" 404 ", " 504 ")) is None  # 4* is "beginning with 4"


VPC_PATTERN = (
    '[version, account, eni, source, destination, srcport, destport="22", protocol="6", packets, bytes, '
    'windowstart, windowend, action="REJECT", flowlogstatus]'
)
SSH_ACCEPTED = "2 123456789010 eni-1235b8ca123456789 172.31.16.139 172.31.16.21 20641 22 6 20 4249 1418530010 1418530070 ACCEPT OK"
RDP_REJECTED = "2 123456789010 eni-1235b8ca123456789 172.31.9.69 172.31.9.12 49761 3389 6 20 4249 1418530010 1418530070 REJECT OK"
NO_DATA = "2 123456789010 eni-1235b8ca123456789 - - - - - - - 1431280876 1431280934 - NODATA"
SKIPPED = "2 123456789010 eni-11111111aaaaaaaaa - - - - - - - 1431280876 1431280934 - SKIPDATA"


def test_the_vpc_guides_rejected_ssh_pattern_on_its_record_examples() -> None:
    assert len(event_fields(SSH_ACCEPTED)) == 14
    assert match(VPC_PATTERN, SSH_ACCEPTED) is None  # accepted, not rejected
    assert match(VPC_PATTERN, RDP_REJECTED) is None  # port 3389
    assert match(VPC_PATTERN, NO_DATA) is None
    assert match(VPC_PATTERN, SKIPPED) is None
    found = match(VPC_PATTERN, SSH_ACCEPTED.replace(" ACCEPT ", " REJECT "))
    assert found is not None
    assert (found["$destport"], found["$action"], found["$bytes"]) == ("22", "REJECT", "4249")


def test_what_the_docs_leave_open_is_refused_not_guessed() -> None:
    with pytest.raises(NotImplementedError):
        match('[a = "x*", b]', "x1 y")
    with pytest.raises(NotImplementedError):
        match("[a = 1 || a = 2 && a = 3, b]", "1 y")
    with pytest.raises(NotImplementedError):
        match("{ $.a = 1 }", '{"a": 1}')
