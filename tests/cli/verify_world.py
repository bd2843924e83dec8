"""The deployed dev environment in moto, built from what the synthesized stacks would create.

moto 5.2.5 cannot deploy our templates (custom resources, EKS, HyperPod, Lambda bundles), so `DeployedWorld`
plays CloudFormation for the resources verify reads: it walks the synthesized Network and Link templates and
creates their VPCs, CIDR blocks, subnets, route tables, gateways, peering, routes and security-group ingress
through EC2 calls, resolving Ref, Fn::GetAtt and Fn::GetStackOutput as CloudFormation would; creates the EKS
and HyperPod clusters and the alarms of the Compute, Ops and Dashboard templates with their own calls; then
creates every planned stack in CloudFormation with a one-resource template carrying the real stack's Outputs
(resolved to the IDs just created) and, in that resource's Metadata, every Fn::GetStackOutput of the real
template as written: moto keeps the body as given and GetTemplate returns it, so verify reads who reads what
from the deployed templates as it would from CloudFormation's. The expected values in these tests therefore
come from the templates, not from the code under test.

A Region in another account is deployed with credentials for that account: moto keys every resource by the
account of the caller's access key, and its STS AssumeRole hands out keys of the role's account (moto's
"Multi-Account support"), so `clients_for(account)` assumes a role there, as an operator's profile would.

What moto does not implement is filled in two ways, each said where it is done:
- EKS ListAddons / DescribeAddon do not exist in moto: `MotoGaps` answers exactly those two operations with a
  botocore before-call hook, in the EKS API's shapes, refusing an unknown cluster or add-on as EKS does;
  composite alarms do not exist in moto either: tests/cli/composite_alarms.py keeps them as CloudWatch does;
- states moto's API cannot produce (a stack that rolled back with failed-resource events, LastUpdatedTime,
  a HyperPod node or cluster not InService, an instance group's Status, an EKS cluster not ACTIVE, a route in
  state blackhole) are written into moto's own backend objects, which its API then serves and serializes
  like any other state.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from moto.backends import get_backend

from hubspoke import training_metrics
from hubspoke.config import HubSpokeConfig
from hubspoke.topology import StackPlan, plan_stacks
from tests.cli.alarm_history import AlarmHistory
from tests.cli.canary_feed import publish_canary, put_emf
from tests.cli.composite_alarms import CompositeAlarms
from tests.cli.preflight_world import Hooked
from tests.conftest import resources

ACCOUNT = "123456789012"  # config/dev.yaml's account, and moto's default

# Creation order inside one template: what each kind refers to exists before it.
_EC2_ORDER = (
    "AWS::EC2::VPC",
    "AWS::EC2::VPCCidrBlock",
    "AWS::EC2::Subnet",
    "AWS::EC2::RouteTable",
    "AWS::EC2::InternetGateway",
    "AWS::EC2::VPCGatewayAttachment",
    "AWS::EC2::EIP",
    "AWS::EC2::NatGateway",
    "AWS::EC2::SecurityGroup",
    "AWS::EC2::VPCPeeringConnection",
    "AWS::EC2::Route",
    "AWS::EC2::VPCEndpoint",
    "AWS::EC2::SecurityGroupIngress",
)


def _stub_zip() -> str:
    """A one-file function package, base64: code moto stores and never runs."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return None\n")
    return base64.b64encode(buffer.getvalue()).decode()


_STUB_ZIP = _stub_zip()
_ROUTE_TARGETS = ("VpcPeeringConnectionId", "GatewayId", "NatGatewayId")


@dataclass
class MotoGaps(Hooked):
    """Client factory: moto for everything, except EKS ListAddons/DescribeAddon, which moto lacks."""

    # (region, cluster name) -> add-on name -> the DescribeAddon `addon` structure.
    addons: dict[tuple[str, str], dict[str, dict[str, Any]]] = field(default_factory=dict)
    asked: list[tuple[str, str]] = field(default_factory=list)
    # Region -> its composite alarms, which moto lacks (tests/cli/composite_alarms.py).
    composites: dict[str, CompositeAlarms] = field(default_factory=dict)
    # Region -> its alarm history, which moto lacks (tests/cli/alarm_history.py).
    history: dict[str, AlarmHistory] = field(default_factory=dict)
    # (region, cluster name) -> the principal ARNs of its access entries (EKS ListAccessEntries; moto lacks it).
    access_entries: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # region -> instance ID -> PingStatus of its SSM Agent (SSM DescribeInstanceInformation; moto lacks it).
    agents: dict[str, dict[str, str]] = field(default_factory=dict)

    def hook(self, client: Any, service: str, region: str) -> None:
        if service == "cloudwatch":
            self.composites.setdefault(region, CompositeAlarms()).hook(client)
            self.history.setdefault(region, AlarmHistory()).hook(client)
        if service == "eks":
            client.meta.events.register("before-call.eks.ListAddons", self._answer(region))
            client.meta.events.register("before-call.eks.DescribeAddon", self._answer(region))
            client.meta.events.register("before-call.eks.ListAccessEntries", self._entries(region))
        if service == "sts":
            client.meta.events.register("after-call.sts.GetCallerIdentity", _iam_user_arn)
        if service == "ssm":
            client.meta.events.register("before-call.ssm.DescribeInstanceInformation", self._agents(region))
        if service == "ec2":
            # moto 5.2.5 ignores every filter of DescribeVpcPeeringConnections; EC2 refuses one it does not document.
            client.meta.events.register(
                "before-call.ec2.DescribeVpcPeeringConnections", _refuse_unknown_filters
            )

    def _agents(self, region: str) -> Callable[..., tuple[AWSResponse, dict[str, Any]]]:
        def answer(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
            # JSON protocol: the request body carries Filters [{Key: InstanceIds, Values: [...]}]; an instance
            # whose agent never registered is not listed.
            body = json.loads(params["body"] or b"{}")
            # The filter keys botocore's ssm model documents (InstanceInformationStringFilter.Key); SSM answers
            # another with InvalidFilterKey, one of the operation's modelled errors.
            for key in (f["Key"] for f in body.get("Filters", [])):
                if key not in _SSM_FILTER_KEYS and not key.startswith("tag:"):
                    return _error(400, "InvalidFilterKey", "The specified key isn't valid.")
            wanted = {v for f in body.get("Filters", []) if f["Key"] == "InstanceIds" for v in f["Values"]}
            known = self.agents.get(region, {})
            listed = [
                {"InstanceId": i, "PingStatus": ping, "PlatformType": "Linux"}
                for i, ping in known.items()
                if not wanted or i in wanted
            ]
            return AWSResponse("https://stub", 200, {}, None), {"InstanceInformationList": listed}

        return answer

    def _entries(self, region: str) -> Callable[..., tuple[AWSResponse, dict[str, Any]]]:
        def answer(model: Any, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
            # GET /clusters/{name}/access-entries (botocore eks service-2.json, ListAccessEntries).
            cluster = params["url_path"].split("?")[0].strip("/").split("/")[1]
            self.asked.append((model.name, params["url_path"]))
            if (region, cluster) not in self.access_entries:
                return _error(404, "ResourceNotFoundException", f"No cluster found for name: {cluster}.")
            return AWSResponse("https://stub", 200, {}, None), {
                "accessEntries": self.access_entries[region, cluster]
            }

        return answer

    def _answer(self, region: str) -> Callable[..., tuple[AWSResponse, dict[str, Any]]]:
        def answer(model: Any, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
            # The serialized request, as botocore would send it: EKS carries cluster and add-on in the URI.
            self.asked.append((model.name, params["url_path"]))
            cluster, addon = _addon_target(params["url_path"])
            installed = self.addons.get((region, cluster))
            if installed is None:
                return _error(404, "ResourceNotFoundException", f"No cluster found for name: {cluster}.")
            if model.name == "ListAddons":
                return AWSResponse("https://stub", 200, {}, None), {"addons": sorted(installed)}
            if addon not in installed:
                return _error(
                    404, "ResourceNotFoundException", f"No addon: {addon} found in cluster: {cluster}"
                )
            return AWSResponse("https://stub", 200, {}, None), {"addon": installed[addon]}

        return answer


def _iam_user_arn(parsed: dict[str, Any], **_: Any) -> None:
    """moto's default credentials are a user it reports as arn:aws:sts::<account>:user/moto; AWS reports an IAM
    user as arn:aws:iam::<account>:user/<name> (STS API reference, GetCallerIdentity, "called by an IAM user")."""
    arn = str(parsed.get("Arn", ""))
    if ":sts::" in arn and ":user/" in arn:
        parsed["Arn"] = arn.replace(":sts::", ":iam::", 1)


def _addon_target(url_path: str) -> tuple[str, str]:
    """(cluster, add-on) from EKS's URIs: /clusters/{name}/addons and /clusters/{clusterName}/addons/{addonName}."""
    parts = url_path.split("?")[0].strip("/").split("/")
    assert parts[0] == "clusters" and parts[2] == "addons", url_path
    return parts[1], parts[3] if len(parts) > 3 else ""


def _refuse_unknown_filters(model: Any, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, Any] | None:
    """EC2 answers a filter name the operation does not document with 400 InvalidParameterValue "The filter 'NAME'
    is invalid" (as users quote it: aws/aws-cli#7225, boto/boto3#1299). The documented names are the list items of
    the request's Filters documentation (botocore ec2 service-2.json); `tag:<key>` takes any key."""
    documented = set(
        re.findall(r"<li> <p> <code>([^<]+)</code> -", model.input_shape.members["Filters"].documentation)
    )
    # Query protocol: Filter.N.Name in the serialized body.
    names = [v for k, v in params["body"].items() if re.fullmatch(r"Filter\.\d+\.Name", k)]
    for name in names:
        if name not in documented and not (name.startswith("tag:") and "tag:<key>" in documented):
            return _error(400, "InvalidParameterValue", f"The filter '{name}' is invalid")
    return None


# DescribeInstanceInformation's filter keys (botocore ssm 2014-11-06 service-2.json, InstanceInformationStringFilter).
_SSM_FILTER_KEYS = frozenset(
    [
        "ActivationIds",
        "AgentVersion",
        "AssociationStatus",
        "IamRole",
        "InstanceIds",
        "PingStatus",
        "PlatformTypes",
        "ResourceType",
        "SourceIds",
        "SourceTypes",
        "tag-key",
    ]
)


def _error(status: int, code: str, message: str) -> tuple[AWSResponse, dict[str, Any]]:
    return AWSResponse("https://stub", status, {}, None), {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }


def assumed_clients(account: str) -> MotoGaps:
    """Clients with credentials for `account`: a role there assumed through STS, as a cross-account profile does."""
    credentials = boto3.client("sts", region_name="us-east-1").assume_role(
        RoleArn=f"arn:aws:iam::{account}:role/hubspoke-verify-tests", RoleSessionName="hubspoke-verify"
    )["Credentials"]
    session = boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    return MotoGaps(lambda service, region: session.client(service, region_name=region))


@dataclass
class DeployedWorld:
    """config/dev.yaml as deployed: EC2, CloudFormation, EKS, HyperPod and alarms in moto."""

    clients: MotoGaps  # the hub account's
    config: HubSpokeConfig
    templates: dict[str, dict[str, Any]]
    physical: dict[str, dict[str, str]] = field(default_factory=dict)
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    others: dict[str, MotoGaps] = field(default_factory=dict)
    # Each canary function's environment as its Ops stack resolved it when first deployed (stack id -> variables).
    environments: dict[str, dict[str, str]] = field(default_factory=dict)

    def clients_for(self, account: str) -> MotoGaps:
        """The clients of one account: the world's own for the hub's, an assumed role's for any other."""
        if account == self.config.account_of(self.config.hub):
            return self.clients
        if account not in self.others:
            self.others[account] = assumed_clients(account)
        return self.others[account]

    @property
    def plans(self) -> dict[str, StackPlan]:
        return {p.id: p for p in plan_stacks(self.config)}

    # ----- deploying -----
    def deploy(self) -> DeployedWorld:
        for plan in plan_stacks(self.config):
            self.physical[plan.id] = {}
            if plan.kind in ("network", "link"):
                self._ec2(plan)
            elif plan.kind == "compute":
                self._compute(plan)
            if plan.kind in ("ops", "dashboard"):
                self._alarms(plan)
            self._stack(plan)
        return self

    def _names(self, plan: StackPlan, node: Any) -> Any:
        """`node` with each {"Ref": ...} (a dimension naming the stack's own function) as a name moto takes."""
        if isinstance(node, dict) and set(node) == {"Ref"}:
            return self._resolve(plan, node) or node["Ref"]
        if isinstance(node, dict):
            return {k: self._names(plan, v) for k, v in node.items()}
        return [self._names(plan, v) for v in node] if isinstance(node, list) else node

    def _resolve(self, plan: StackPlan, value: Any) -> Any:
        if isinstance(value, list):
            return [self._resolve(plan, v) for v in value]
        if isinstance(value, dict) and "Ref" in value:
            return self.physical[plan.id].get(value["Ref"])
        if isinstance(value, dict) and "Fn::GetAtt" in value:
            logical, attribute = value["Fn::GetAtt"][:2]
            found = self.physical[plan.id].get(f"{logical}.{attribute}")
            return found or self.physical[plan.id].get(logical)
        if isinstance(value, dict) and "Fn::GetStackOutput" in value:
            ref = value["Fn::GetStackOutput"]
            return self.outputs.get(ref["StackName"], {}).get(ref["OutputName"])
        return value if isinstance(value, str | int | float | bool) else None

    def _value(self, plan: StackPlan, node: Any, changed: dict[str, str] | None = None) -> Any:
        """An output's or variable's value as CloudFormation computes it at deploy: Fn::Join, Fn::Split and
        Fn::Select over what `_resolve` knows; an attribute only a custom resource makes at deploy time (CNQ's
        floating IPs) is a placeholder without commas, the same for every output that carries it."""
        if changed and _key(node) in changed:
            return changed[_key(node)]
        if isinstance(node, list):
            return [self._value(plan, v, changed) for v in node]
        if isinstance(node, dict) and "Fn::Join" in node:
            separator, items = node["Fn::Join"]
            return separator.join(str(self._value(plan, v, changed)) for v in items)
        if isinstance(node, dict) and "Fn::Split" in node:
            separator, text = node["Fn::Split"]
            return str(self._value(plan, text, changed)).split(separator)
        if isinstance(node, dict) and "Fn::Select" in node:
            index, items = node["Fn::Select"]
            listed = self._value(plan, items, changed)
            if int(index) < len(listed):
                return listed[int(index)]
            # A part of a placeholder (the ARN of a repository the world never made): another placeholder.
        found = self._resolve(plan, node)
        if found is None and isinstance(node, dict) and "Fn::GetAtt" in node:
            return f"unresolved:{plan.id}/{'.'.join(node['Fn::GetAtt'][:2])}"
        digest = hashlib.sha256(_key(node).encode()).hexdigest()[:12]
        return f"unresolved:{plan.id}/{digest}" if found is None else found

    def _ec2(self, plan: StackPlan) -> None:
        template = self.templates[plan.id]
        ec2 = self.clients_for(plan.account)("ec2", plan.region)
        for kind in _EC2_ORDER:
            for logical, resource in resources(template, kind):
                props = {k: self._resolve(plan, v) for k, v in resource.get("Properties", {}).items()}
                made = self._create(ec2, plan, kind, props)
                if made:
                    self.physical[plan.id][logical] = made

    def _create(self, ec2: Any, plan: StackPlan, kind: str, props: dict[str, Any]) -> str | None:
        if kind == "AWS::EC2::VPC":
            return str(ec2.create_vpc(CidrBlock=props["CidrBlock"])["Vpc"]["VpcId"])
        if kind == "AWS::EC2::VPCCidrBlock":
            ec2.associate_vpc_cidr_block(VpcId=props["VpcId"], CidrBlock=props["CidrBlock"])
        elif kind == "AWS::EC2::Subnet":
            subnet = ec2.create_subnet(
                VpcId=props["VpcId"],
                CidrBlock=props["CidrBlock"],
                AvailabilityZoneId=props["AvailabilityZoneId"],
            )
            return str(subnet["Subnet"]["SubnetId"])
        elif kind == "AWS::EC2::RouteTable":
            return str(ec2.create_route_table(VpcId=props["VpcId"])["RouteTable"]["RouteTableId"])
        elif kind == "AWS::EC2::InternetGateway":
            return str(ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"])
        elif kind == "AWS::EC2::VPCGatewayAttachment":
            ec2.attach_internet_gateway(InternetGatewayId=props["InternetGatewayId"], VpcId=props["VpcId"])
        elif kind == "AWS::EC2::EIP":
            return str(ec2.allocate_address(Domain="vpc")["AllocationId"])
        elif kind == "AWS::EC2::NatGateway":
            nat = ec2.create_nat_gateway(SubnetId=props["SubnetId"], AllocationId=props["AllocationId"])
            return str(nat["NatGateway"]["NatGatewayId"])
        elif kind == "AWS::EC2::SecurityGroup":
            group = ec2.create_security_group(
                GroupName=f"{plan.name}-{len(self.physical[plan.id])}",
                Description=props["GroupDescription"],
                VpcId=props["VpcId"],
            )
            return str(group["GroupId"])
        elif kind == "AWS::EC2::VPCPeeringConnection":
            owner = props.get("PeerOwnerId") or plan.account
            pcx = ec2.create_vpc_peering_connection(
                VpcId=props["VpcId"],
                PeerVpcId=props["PeerVpcId"],
                PeerRegion=props["PeerRegion"],
                PeerOwnerId=owner,
            )["VpcPeeringConnection"]["VpcPeeringConnectionId"]
            # Same account: accepted automatically; another account: CloudFormation accepts it with the
            # PeerRoleArn in the accepter's account (AWS::EC2::VPCPeeringConnection). Either way the accepter
            # account accepts it in the accepter's Region.
            self.clients_for(owner)("ec2", props["PeerRegion"]).accept_vpc_peering_connection(
                VpcPeeringConnectionId=pcx
            )
            return str(pcx)
        elif kind == "AWS::EC2::Route":
            target = {k: props[k] for k in _ROUTE_TARGETS if props.get(k)}
            ec2.create_route(
                RouteTableId=props["RouteTableId"],
                DestinationCidrBlock=props["DestinationCidrBlock"],
                **target,
            )
        elif kind == "AWS::EC2::VPCEndpoint":
            # RegionVpc's S3 gateway endpoint: EC2 adds a route to the S3 prefix list in each table given.
            ec2.create_vpc_endpoint(
                VpcId=props["VpcId"],
                ServiceName=props["ServiceName"],
                VpcEndpointType=props["VpcEndpointType"],
                RouteTableIds=props["RouteTableIds"],
            )
        elif kind == "AWS::EC2::SecurityGroupIngress" and props.get("CidrIp"):
            ec2.authorize_security_group_ingress(
                GroupId=props["GroupId"],
                IpPermissions=[
                    {
                        "IpProtocol": props["IpProtocol"],
                        "FromPort": props["FromPort"],
                        "ToPort": props["ToPort"],
                        "IpRanges": [
                            {"CidrIp": props["CidrIp"], "Description": props.get("Description", "")}
                        ],
                    }
                ],
            )
        return None

    def _compute(self, plan: StackPlan) -> None:
        template = self.templates[plan.id]
        for logical, resource in resources(template, "AWS::EKS::Cluster"):
            props = resource["Properties"]
            vpc = props["ResourcesVpcConfig"]
            self.clients_for(plan.account)("eks", plan.region).create_cluster(
                name=props["Name"],
                version=props["Version"],
                roleArn=f"arn:aws:iam::{plan.account}:role/{plan.name}-eks",
                resourcesVpcConfig={
                    "subnetIds": [str(self._resolve(plan, s)) for s in vpc["SubnetIds"]],
                    "endpointPublicAccess": vpc["EndpointPublicAccess"],
                    "endpointPrivateAccess": vpc["EndpointPrivateAccess"],
                },
            )
            self.physical[plan.id][logical] = props["Name"]
            described = self.clients_for(plan.account)("eks", plan.region).describe_cluster(
                name=props["Name"]
            )
            self.physical[plan.id][f"{logical}.Endpoint"] = described["cluster"]["endpoint"]
            # The entries the template creates: literal ARNs (config.access.administrators) and roles of its own.
            self.clients_for(plan.account).access_entries[plan.region, props["Name"]] = [
                e["Properties"]["PrincipalArn"]
                if isinstance(e["Properties"]["PrincipalArn"], str)
                else f"arn:aws:iam::{plan.account}:role/{plan.name}-{e['Properties']['PrincipalArn']['Fn::GetAtt'][0]}"
                for _, e in resources(template, "AWS::EKS::AccessEntry")
            ]
            self.clients.addons[plan.region, props["Name"]] = {
                a["Properties"]["AddonName"]: _addon(plan, props["Name"], a["Properties"])
                for _, a in resources(template, "AWS::EKS::Addon")
            }
        for logical, resource in resources(template, "AWS::EC2::Instance"):
            # The SSM access host, in the template's subnet; its image is registered here (the template's is a
            # deploy-time SSM parameter).
            ec2 = self.clients_for(plan.account)("ec2", plan.region)
            [nic] = resource["Properties"]["NetworkInterfaces"]
            image = ec2.register_image(Name=f"access-host-{plan.region}", RootDeviceName="/dev/xvda")[
                "ImageId"
            ]
            [instance] = ec2.run_instances(
                ImageId=image,
                MinCount=1,
                MaxCount=1,
                InstanceType=resource["Properties"]["InstanceType"],
                SubnetId=str(self._resolve(plan, nic["SubnetId"])),
            )["Instances"]
            self.physical[plan.id][logical] = instance["InstanceId"]
            # Its agent registered and answers (Amazon Linux 2023 ships it; the NAT carries it).
            self.clients_for(plan.account).agents.setdefault(plan.region, {})[instance["InstanceId"]] = (
                "Online"
            )
        for logical, resource in resources(template, "AWS::SageMaker::Cluster"):
            props = resource["Properties"]
            groups = [
                {
                    "InstanceGroupName": g["InstanceGroupName"],
                    "InstanceType": g["InstanceType"],
                    "InstanceCount": g["InstanceCount"],
                    "ExecutionRole": f"arn:aws:iam::{plan.account}:role/{plan.name}-hyperpod",
                    # moto refuses a SourceS3Uri outside s3://sagemaker-*; ours is a generated bucket.
                    "LifeCycleConfig": {
                        "SourceS3Uri": "s3://sagemaker-lifecycle/lifecycle/",
                        "OnCreate": "on_create.sh",
                    },
                    "ThreadsPerCore": g["ThreadsPerCore"],
                }
                for g in props["InstanceGroups"]
            ]
            arn = self.clients_for(plan.account)("sagemaker", plan.region).create_cluster(
                ClusterName=props["ClusterName"],
                InstanceGroups=groups,
                # The template's subnets, resolved as EKS's are: verify reads their AZ IDs.
                VpcConfig={
                    "SecurityGroupIds": ["sg-12345678"],
                    "Subnets": [str(self._resolve(plan, s)) for s in props["VpcConfig"]["Subnets"]],
                },
            )["ClusterArn"]
            # DescribeCluster's InstanceGroups[].Status (InService when healthy); moto 5.2.5 sets none.
            for group in self.hyperpod(plan.region).instance_groups:
                group["Status"] = "InService"
            self.physical[plan.id][logical] = arn

    def _alarms(self, plan: StackPlan) -> None:
        cloudwatch = self.clients_for(plan.account)("cloudwatch", plan.region)
        for _, resource in resources(self.templates[plan.id], "AWS::CloudWatch::Alarm"):
            props = {
                k: v
                for k, v in resource["Properties"].items()
                if k not in ("AlarmActions", "OKActions", "InsufficientDataActions", "Tags")
            }
            cloudwatch.put_metric_alarm(**self._names(plan, props))
            # A freshly created alarm is INSUFFICIENT_DATA until evaluated; a healthy world has evaluated.
            cloudwatch.set_alarm_state(
                AlarmName=props["AlarmName"], StateValue="OK", StateReason="evaluated in the test world"
            )
        for _, resource in resources(self.templates[plan.id], "AWS::CloudWatch::CompositeAlarm"):
            self.clients_for(plan.account).composites[plan.region].put(resource["Properties"])
            cloudwatch.set_alarm_state(
                AlarmName=resource["Properties"]["AlarmName"],
                StateValue="OK",
                StateReason="evaluated in the test world",
            )

    def _stack(
        self, plan: StackPlan, *, drop: tuple[str, ...] = (), replace: dict[str, str] | None = None
    ) -> None:
        outputs = self.templates[plan.id].get("Outputs", {})
        # A replaced output stands for its resource's attribute: every output computed from it changes with it
        # (the named FloatingIps and the weak reference's PublishOutput... carry the same Fn::GetAtt).
        changed = {_key(outputs[n]["Value"]): v for n, v in (replace or {}).items() if n in outputs}
        values = {
            name: str(self._value(plan, out["Value"], changed))
            for name, out in outputs.items()
            if name not in drop
        } | {n: v for n, v in (replace or {}).items() if n not in outputs}
        self.outputs[plan.name] = values
        self.clients_for(plan.account)("cloudformation", plan.region).create_stack(
            StackName=plan.name, TemplateBody=json.dumps(self._body(plan, values))
        )

    def _body(
        self, plan: StackPlan, values: dict[str, str], *, reading: bool = True, **extra: str
    ) -> dict[str, Any]:
        """The template moto deploys for a stack: its outputs, the real template's Fn::GetStackOutput (unless
        `reading` is False: a version of the stack that read nothing), and the functions whose environment
        verify reads (the canary's, with its weak references resolved as CloudFormation resolved them)."""
        reads = list(_stack_outputs(self.templates[plan.id].get("Resources", {}))) if reading else []
        body: dict[str, Any] = {
            # moto 5.2.5 never reads Metadata (moto/cloudformation names it nowhere) and GetTemplate returns
            # the body as given (CloudFormationBackend.get_template: the stack's template).
            "Resources": {"Placeholder": {"Type": "AWS::SNS::Topic", "Metadata": {"Reads": reads}}},
            "Outputs": {name: {"Value": value} for name, value in values.items()},
            **extra,
        }
        for logical, function in resources(self.templates[plan.id], "AWS::Lambda::Function"):
            variables = function["Properties"].get("Environment", {}).get("Variables", {})
            if "HUB_ADDRESSES" not in variables:
                continue
            if plan.id not in self.environments:
                self.environments[plan.id] = {k: str(self._value(plan, v)) for k, v in variables.items()}
            iam = self.clients_for(plan.account)("iam", "us-east-1")
            role = f"canary-{plan.region}"
            try:
                arn = iam.get_role(RoleName=role)["Role"]["Arn"]
            except iam.exceptions.NoSuchEntityException:
                trust = {"Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
                                        "Action": "sts:AssumeRole"}]}  # fmt: skip
                arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))["Role"][
                    "Arn"
                ]
            body["Resources"][logical] = {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Role": arn,
                    "Runtime": "python3.12",
                    "Handler": "index.handler",
                    # moto's CloudFormation Lambda takes ZipFile as a base64 zip (it decodes it as one).
                    "Code": {"ZipFile": _STUB_ZIP},
                    "Environment": {"Variables": self.environments[plan.id]},
                },
            }
        return body

    # ----- changes a test makes -----
    def redeploy_without(self, stack_id: str, *outputs: str) -> None:
        """Replace a stack by one lacking some outputs (as an older version of it would)."""
        plan = self.plans[stack_id]
        self.clients_for(plan.account)("cloudformation", plan.region).delete_stack(StackName=plan.name)
        self._stack(plan, drop=outputs)

    def redeploy_with(self, stack_id: str, **outputs: str) -> None:
        """Replace a stack by one whose outputs carry other values (its resources were replaced)."""
        plan = self.plans[stack_id]
        self.clients_for(plan.account)("cloudformation", plan.region).delete_stack(StackName=plan.name)
        self._stack(plan, replace=outputs)

    def update(
        self,
        stack_id: str,
        at: datetime | None = None,
        *,
        keep_environment: bool = False,
        reading: bool = True,
    ) -> None:
        """An update of the stack through UpdateStack; moto 5.2.5 keeps no LastUpdatedTime, so it is set here.
        `reading=False` deploys a version of it whose template reads no other stack."""
        plan = self.plans[stack_id]
        client = self.clients_for(plan.account)("cloudformation", plan.region)
        # An update resolves the stack's weak references again (the refresh's premise, docs ASSUMED).
        if not keep_environment:
            self.environments.pop(stack_id, None)
        body = self._body(
            plan, self.outputs[plan.name], reading=reading, Description=f"updated {at or datetime.now(UTC)}"
        )
        client.update_stack(StackName=plan.name, TemplateBody=json.dumps(body))
        self._moto_stack(plan).last_updated_time = at or datetime.now(UTC)

    def operation_failed(
        self,
        stack_id: str,
        *,
        status: str,
        failures: Sequence[tuple[str, str, str]],
        rollback_failures: Sequence[tuple[str, str, str]] = (),
        tied: bool = False,
    ) -> None:
        """Make the stack's latest operation one that failed: (logical id, type, reason) per failed resource.

        `status` picks the operation, as CloudFormation's stack status codes name them: UPDATE_* an update,
        DELETE_FAILED a delete, any other a create. `rollback_failures` are resources that then failed to
        roll back (an update's rollback updates them back: UPDATE_FAILED; a create's deletes them:
        DELETE_FAILED), written after the stack's ROLLBACK_IN_PROGRESS event. `tied` writes the failures
        within one second, where DescribeStackEvents's order among them says nothing of which came first.

        moto 5.2.5 never fails a resource and records only stack-level events, so these events are added to
        moto's own event list, oldest first, as DescribeStackEvents then serves them (newest first).
        """
        from moto.cloudformation.models import Event

        plan = self.plans[stack_id]
        stack = self._moto_stack(plan)
        verb = (
            "UPDATE" if status.startswith("UPDATE") else "DELETE" if status == "DELETE_FAILED" else "CREATE"
        )

        def event(logical: str, kind: str, state: str, reason: str | None, *, tie: bool = False) -> None:
            made = Event(stack.stack_id, plan.name, logical, f"{logical}-physical", kind, state, reason, None)
            # One second apart, as a real operation's events are, unless the test wants them tied.
            step = timedelta(seconds=0 if tie else 1)
            made.timestamp = stack.events[-1].timestamp + step if stack.events else made.timestamp
            stack.events.append(made)

        event(plan.name, "AWS::CloudFormation::Stack", f"{verb}_IN_PROGRESS", "User Initiated")
        for n, (logical, kind, reason) in enumerate(failures):
            event(logical, kind, f"{verb}_IN_PROGRESS", None, tie=tied and n > 0)
            event(logical, kind, f"{verb}_FAILED", reason, tie=tied)
        if verb != "DELETE":
            rollback = "UPDATE_ROLLBACK_IN_PROGRESS" if verb == "UPDATE" else "ROLLBACK_IN_PROGRESS"
            event(
                plan.name,
                "AWS::CloudFormation::Stack",
                rollback,
                f"The following resource(s) failed to {verb.lower()}: [{failures[0][0]}].",
            )
            undo = "UPDATE" if verb == "UPDATE" else "DELETE"
            for logical, kind, reason in rollback_failures:
                event(logical, kind, f"{undo}_IN_PROGRESS", None)
                event(logical, kind, f"{undo}_FAILED", reason)
        event(plan.name, "AWS::CloudFormation::Stack", status, None)
        stack.status = status

    def _moto_stack(self, plan: StackPlan) -> Any:
        backend = get_backend("cloudformation")[plan.account][plan.region]
        return next(s for s in backend.stacks.values() if s.name == plan.name)

    def route_table(self, region: str, az: str) -> str:
        network = self.outputs[self.plans[f"network-{region}"].name]
        return network["PrivateRouteTable" + "".join(p.capitalize() for p in az.split("-"))]

    def blackhole(self, monkeypatch: pytest.MonkeyPatch, route_table: str, cidr: str) -> None:
        """Mark a route `blackhole` (its target deleted): moto 5.2.5 reports every route `active`."""
        from moto.ec2.models.route_tables import Route

        dead = (route_table, cidr)
        monkeypatch.setattr(
            Route,
            "state",
            property(
                lambda r: "blackhole" if (r.route_table.id, r.destination_cidr_block) == dead else "active"
            ),
        )

    def security_group(self, region: str) -> str:
        return self.outputs[self.plans[f"network-{region}"].name]["PeerPathSecurityGroupId"]

    def peering(self, spoke: str) -> str:
        return self.outputs[self.plans[f"network-{spoke}"].name]["PeeringConnectionId"]

    def hyperpod(self, region: str) -> Any:
        """moto's HyperPod cluster object: its status and nodes' statuses cannot be set through the API."""
        return get_backend("sagemaker")[ACCOUNT][region].clusters[f"hubspoke-dev-{region}"]

    def eks_cluster(self, region: str) -> Any:
        return get_backend("eks")[ACCOUNT][region].clusters[f"hubspoke-dev-{region}"]

    def alarm(self, region: str, name: str, state: str, reason: str = "Threshold Crossed") -> None:
        self.clients("cloudwatch", region).set_alarm_state(
            AlarmName=name, StateValue=state, StateReason=reason
        )

    # ----- prewarm -----
    def prewarm(self, region: str, fraction: float, *, minutes_ago: float = 3) -> None:
        """prewarm's cached-fraction EMF record (hubspoke/training_metrics.py), filed as CloudWatch Logs does."""
        stamp = datetime.now(UTC) - timedelta(minutes=minutes_ago)
        record = training_metrics.emf_record(
            {training_metrics.DATASET_PREWARMED_FRACTION: fraction},
            environment=self.config.environment,
            region=region,
            timestamp_ms=int(stamp.timestamp() * 1000),
        )
        put_emf(self.clients("cloudwatch", region), record)

    # ----- the canary -----
    def canary(self, spoke: str, *, minutes_ago: Iterable[int] = range(2, 5), **report: Any) -> None:
        """The spoke's canary reporting at these minutes before now (canary_feed.publish_canary)."""
        publish_canary(
            self.clients("cloudwatch", spoke),
            environment=self.config.environment,
            spoke=spoke,
            minutes_ago=minutes_ago,
            **report,
        )


def _key(node: Any) -> str:
    """A template expression as a comparable string."""
    return json.dumps(node, sort_keys=True)


def _stack_outputs(node: Any) -> Iterable[dict[str, Any]]:
    """Every {"Fn::GetStackOutput": ...} in a template's node, as written."""
    if isinstance(node, dict):
        if "Fn::GetStackOutput" in node:
            yield node
        for value in node.values():
            yield from _stack_outputs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _stack_outputs(value)


def _addon(plan: StackPlan, cluster: str, props: dict[str, Any]) -> dict[str, Any]:
    """The DescribeAddon `addon` EKS reports for an add-on the template installs, healthy."""
    name = props["AddonName"]
    return {
        "addonName": name,
        "clusterName": cluster,
        "status": "ACTIVE",
        "addonVersion": props.get("AddonVersion", "v1.0.0-eksbuild.1"),
        "health": {"issues": []},
        "addonArn": f"arn:aws:eks:{plan.region}:{ACCOUNT}:addon/{cluster}/{name}/0",
    }
