"""The one rule preflight's `deployed kubernetes` row and verify's `eks` row share: which version step EKS takes.

EKS User Guide, "Update existing cluster to new Kubernetes version" (awsdocs/amazon-eks-user-guide@4d52b4d0,
latest/ug/clusters/update-cluster.adoc): "you can update only one minor version at a time ... You must first
update your version 1.28 cluster to version 1.29"; a control plane is never downgraded.
"""

from __future__ import annotations

import pytest

from hubspoke.eks_addons import upgrade_refusal


@pytest.mark.parametrize(
    ("live", "wanted", "step"),
    [
        ("1.33", "1.33", None),  # nothing to do
        ("1.33", "1.34", None),  # the one step EKS takes
        ("1.28", "1.30", "1.29"),  # the guide's own example: 1.28 goes to 1.29 first
        ("1.33", "1.35", "1.34"),
        ("1.34", "1.33", "1.34"),  # no downgrade: keep what runs
        ("1.9", "1.10", None),  # minors compare as numbers, not text
    ],
)
def test_only_the_next_minor_is_taken_and_the_refusal_names_the_version_to_set(
    live: str, wanted: str, step: str | None
) -> None:
    refusal = upgrade_refusal(live, wanted)
    assert (refusal[1] if refusal else None) == step


def test_a_downgrade_and_a_skip_are_refused_for_different_reasons() -> None:
    down, skip = upgrade_refusal("1.34", "1.33"), upgrade_refusal("1.33", "1.35")
    assert down is not None and "downgrade" in down[0]
    assert skip is not None and "one minor version per update" in skip[0]
