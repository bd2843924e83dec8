"""The provisioning custom resources' Lambdas (runtime/ beside this file) behind an asynchronous CDK Provider.

on_event answers at once; is_complete is polled every QUERY_INTERVAL until the cluster (or portal) is
done, for at most storage.formation_timeout_minutes (aws-cdk-lib custom_resources, Provider:
isCompleteHandler, queryInterval, totalTimeout "The maximum timeout is 1 hour"). CloudFormation gives a
custom resource at most 3600 s (AWS::CloudFormation::CustomResource ServiceTimeout, 1 to 3600), so the
configured wait stays below it and the framework still has time to report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct

from hubspoke.constructs.cnq.bundling import IS_COMPLETE_HANDLER, ON_EVENT_HANDLER, RUNTIME, provisioner_code
from hubspoke.constructs.cnq.runtime import contract
from hubspoke.constructs.provider import LOG_RETENTION, https_egress_group, vpc_provider
from hubspoke.names import CNQ_CLAMP_SENT_TAG, CNQ_CLUSTER_TAG, CNQ_CREATE_SENT_TAG
from hubspoke.policy.acks import acknowledge
from hubspoke.ports import QUMULO_REST

# on_event validates and does once-per-request work (a login, a capacity change, a portal lookup).
ON_EVENT_TIMEOUT = Duration.minutes(3)
# One is_complete poll: a few REST calls per node, each bounded to 10 s; the handler keeps 20 s in reserve.
IS_COMPLETE_TIMEOUT = Duration.minutes(5)
QUERY_INTERVAL = Duration.seconds(30)
# CloudFormation's own limit on one custom-resource operation (ServiceTimeout maximum).
CUSTOM_RESOURCE_LIMIT = Duration.hours(1)
# The tag keys the runtime reads and writes (runtime/contract.py): it ships alone, so it is told them.
RUNTIME_ENVIRONMENT: Mapping[str, str] = {
    contract.CLUSTER_TAG_ENV: CNQ_CLUSTER_TAG,
    contract.CREATE_SENT_TAG_ENV: CNQ_CREATE_SENT_TAG,
    contract.CLAMP_SENT_TAG_ENV: CNQ_CLAMP_SENT_TAG,
}


class CnqProvisioner(Construct):
    """A Lambda that forms CNQ clusters and portals through Qumulo's REST API, as a custom-resource provider.

    Example::

        provisioner = CnqProvisioner(stack, "Provisioner", vpc=net.vpc, subnets=net.private_subnets,
                                     rest_cidrs=[*region.all_cidrs, *config.peer_cidrs(region)],
                                     clusters=["dev-use2"], wait=Duration.minutes(50))
        provisioner.resource(stack, "Cluster", resource_type="Custom::CnqCluster", properties={...})

    Egress: Qumulo's REST port to `rest_cidrs` and HTTPS for AWS APIs, nothing else. EC2 writes only
    termination protection and the create-record tag of instances tagged with one of `clusters`;
    CloudFormation only reads this stack's status.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnets: Sequence[ec2.ISubnet],
        rest_cidrs: Sequence[str],
        clusters: Sequence[str],
        wait: Duration,
    ) -> None:
        super().__init__(scope, construct_id)
        if wait.to_seconds() >= CUSTOM_RESOURCE_LIMIT.to_seconds():
            raise ValueError(
                f"a wait of {wait.to_minutes()} min does not fit CloudFormation's 60-minute limit"
            )
        self.wait = wait
        self.security_group = https_egress_group(
            self,
            "Egress",
            vpc=vpc,
            description="CNQ provisioner: Qumulo REST and HTTPS out",
            https_for="AWS APIs (Secrets Manager, EC2, CloudFormation, Lambda, Step Functions)",
            before=[
                (ec2.Peer.ipv4(cidr), ec2.Port.tcp(QUMULO_REST), "Qumulo REST API") for cidr in rest_cidrs
            ],
        )
        log_group = self._log_group("Logs")
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(f"service-role/{name}")
                for name in ("AWSLambdaBasicExecutionRole", "AWSLambdaVPCAccessExecutionRole")
            ],
        )
        code = provisioner_code()
        functions = {
            name: lambda_.Function(
                self,
                name,
                description=f"CNQ clusters and portals through Qumulo's REST API ({handler.rsplit('.', 1)[1]})",
                runtime=RUNTIME,
                handler=handler,
                code=code,
                timeout=timeout,
                memory_size=256,
                role=role,
                vpc=vpc,
                vpc_subnets=ec2.SubnetSelection(subnets=list(subnets)),
                security_groups=[self.security_group],
                log_group=log_group,
                environment=dict(RUNTIME_ENVIRONMENT),
            )
            for name, handler, timeout in (
                ("Function", ON_EVENT_HANDLER, ON_EVENT_TIMEOUT),
                ("IsComplete", IS_COMPLETE_HANDLER, IS_COMPLETE_TIMEOUT),
            )
        }
        self.function = functions["Function"]
        self._grant_node_protection(role, clusters)
        provider = vpc_provider(
            self,
            "Provider",
            on_event=self.function,
            is_complete=functions["IsComplete"],
            query_interval=QUERY_INTERVAL,
            total_timeout=wait,
            vpc=vpc,
            subnets=subnets,
            security_group=self.security_group,
            log_group=self._log_group("ProviderLogs"),
            # Every state of every wait, without the execution data (resource properties).
            waiter_logs=cr.LogOptions(
                destination=self._log_group("WaiterLogs"),
                include_execution_data=False,
                level=sfn.LogLevel.ALL,
            ),
        )
        self.service_token = provider.service_token
        managed = "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        acknowledge(
            self,
            "AwsSolutions-IAM4",
            reason="AWSLambdaBasicExecutionRole and AWSLambdaVPCAccessExecutionRole are the AWS-maintained minimum "
            "for a Lambda that logs and runs in a VPC; the CDK Provider framework attaches the first to its own",
            findings=[f"{managed}AWSLambdaBasicExecutionRole", f"{managed}AWSLambdaVPCAccessExecutionRole"],
        )
        stack = Stack.of(self)
        function_ids = [stack.get_logical_id(f.node.default_child) for f in functions.values()]  # type: ignore[arg-type]
        # The framework's own isComplete and onTimeout functions, which its waiter state machine invokes.
        function_ids += [
            stack.get_logical_id(c)
            for c in provider.node.find_all()
            if isinstance(c, lambda_.CfnFunction)
            and c.node.path.rsplit("/", 2)[-2] in ("framework-isComplete", "framework-onTimeout")
        ]
        acknowledge(
            self,
            "AwsSolutions-IAM5",
            reason="the CDK Provider framework may invoke any version of the provisioning handlers, which is the "
            "functions' own ARNs suffixed with :*; EC2 Describe* has no resource-level scope, and the protection "
            "switch is limited by the hubspoke:cnq-cluster tag to this stack's nodes, whose IDs do not exist "
            "before the nodes (which wait for this function's node-shape guard)",
            findings=[
                *(f"Resource::<{fid}.Arn>:*" for fid in function_ids),
                "Resource::*",
                f"Resource::arn:<AWS::Partition>:ec2:{stack.region}:{stack.account}:instance/*",
            ],
        )

    def resource(self, scope: Construct, construct_id: str, *, resource_type: str,
                 properties: Mapping[str, Any]) -> CustomResource:  # fmt: skip
        """A custom resource served by this provider; the handler reads the wait from WaitSeconds."""
        return CustomResource(
            scope,
            construct_id,
            service_token=self.service_token,
            resource_type=resource_type,
            service_timeout=CUSTOM_RESOURCE_LIMIT,
            properties={**properties, "WaitSeconds": str(int(self.wait.to_seconds()))},
        )

    def _log_group(self, construct_id: str) -> logs.LogGroup:
        """Provisioning logs (steps and states, no data): a year, deleted with the stack."""
        return logs.LogGroup(
            self, construct_id, retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )

    def _grant_node_protection(self, role: iam.Role, clusters: Sequence[str]) -> None:
        """Termination protection on the stack's own nodes only, found by their cluster tag (runtime/nodes.py)."""
        stack = Stack.of(self)
        instances = stack.format_arn(service="ec2", resource="instance", resource_name="*")
        tagged = {f"aws:ResourceTag/{CNQ_CLUSTER_TAG}": list(clusters)}
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["ec2:DescribeInstanceAttribute"],
                resources=[instances],
                conditions={"StringEquals": tagged},
            )
        )
        # Scoped by the nodes' cluster tag (Service Authorization Reference, "Actions, resources, and
        # condition keys for Amazon EC2", ModifyInstanceAttribute), not ec2:Attribute, which public reports
        # find absent from the request and would deny every deploy; the handler sends DisableApiTermination
        # alone (runtime/nodes.py).
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["ec2:ModifyInstanceAttribute"],
                resources=[instances],
                conditions={"StringEquals": tagged},
            )
        )
        # The records that the cluster-create call and a capacity clamp were sent (runtime/nodes.py CreateTag): these tag keys only
        # (aws:TagKeys, "Controlling access based on tag keys", IAM User Guide), on the stack's own nodes.
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["ec2:CreateTags"],
                resources=[instances],
                conditions={
                    "StringEquals": tagged,
                    "ForAllValues:StringEquals": {"aws:TagKeys": [CNQ_CREATE_SENT_TAG, CNQ_CLAMP_SENT_TAG]},
                },
            )
        )
        # The node-shape guard reads what the nodes run (runtime/shape.py); Describe* has no resource scope.
        role.add_to_policy(
            iam.PolicyStatement(actions=["ec2:DescribeInstances", "ec2:DescribeVolumes"], resources=["*"])
        )
        # Whether CloudFormation still waits for a request (runtime/nodes.py, require_awaited).
        role.add_to_policy(
            iam.PolicyStatement(actions=["cloudformation:DescribeStacks"], resources=[stack.stack_id])
        )
