"""Our rule on the SSM access host: the way to the private EKS endpoint opens nothing inbound.

Session Manager needs no inbound port on the node it connects to (Systems Manager User Guide, "AWS Systems
Manager Session Manager": no open inbound ports, no bastion SSH keys); the agent dials out. So an ingress rule
on the host's security group, or a public address, only widens what the host exposes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.policy.model import PolicyRule, Template, Violation, referenced

# The tag that marks the access host (hubspoke/constructs/hyperpod/access.py sets it).
ACCESS_HOST_TAG = ("hubspoke:role", "access-host")


def _is_access_host(props: Mapping[str, Any]) -> bool:
    return {"Key": ACCESS_HOST_TAG[0], "Value": ACCESS_HOST_TAG[1]} in props.get("Tags", [])


def _groups(props: Mapping[str, Any]) -> set[str]:
    """Logical IDs of the security groups an instance carries, on the instance or its interfaces."""
    found = [*props.get("SecurityGroupIds", [])]
    for nic in props.get("NetworkInterfaces", []):
        found += nic.get("GroupSet", [])
    return {ref for ref in (referenced(g) for g in found) if isinstance(ref, str)}


def access_host_no_ingress(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-AccessHostNoIngress: the SSM access host's security groups admit nothing and it has no public IP."""
    for t in templates:
        for host_id, props in t.resources("AWS::EC2::Instance"):
            if not _is_access_host(props):
                continue
            groups = _groups(props)
            inline = [
                g
                for g, p in t.resources("AWS::EC2::SecurityGroup")
                if g in groups and p.get("SecurityGroupIngress")
            ]
            standalone = [
                rule_id
                for rule_id, p in t.resources("AWS::EC2::SecurityGroupIngress")
                if referenced(p.get("GroupId")) in groups
            ]
            public = [
                n for n in props.get("NetworkInterfaces", []) if n.get("AssociatePublicIpAddress") is True
            ]
            for where in (*inline, *standalone):
                yield Violation(
                    "HubSpoke-AccessHostNoIngress",
                    t.path,
                    where,
                    f"an ingress rule on the security group of access host {host_id}",
                    "remove it: Session Manager connects outbound from the agent and needs no inbound port",
                )
            if public:
                yield Violation(
                    "HubSpoke-AccessHostNoIngress",
                    t.path,
                    host_id,
                    "the access host has a public IP address",
                    "keep it in a private subnet without a public address; Session Manager reaches it through NAT",
                )


ACCESS_RULES: tuple[PolicyRule, ...] = (access_host_no_ingress,)
