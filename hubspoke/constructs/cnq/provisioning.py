"""The provisioning custom resource's Lambda (runtime/ beside this file) behind a CDK Provider, inside the VPC."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from hubspoke.constructs.cnq.bundling import HANDLER, RUNTIME, provisioner_code
from hubspoke.policy.acks import acknowledge
from hubspoke.ports import QUMULO_REST

# The Provider framework gives up on a handler after 15 minutes; ours stops its own waits 20 s before this.
HANDLER_TIMEOUT = Duration.minutes(14)


class CnqProvisioner(Construct):
    """A Lambda that forms CNQ clusters and portals through Qumulo's REST API, as a custom-resource provider.

    Example::

        provisioner = CnqProvisioner(stack, "Provisioner", vpc=net.vpc, subnets=net.private_subnets,
                                     rest_cidrs=[*region.all_cidrs, *config.peer_cidrs(region)])
        CustomResource(stack, "Cluster", service_token=provisioner.service_token,
                       resource_type="Custom::CnqCluster", properties={...})

    Egress: Qumulo's REST port towards `rest_cidrs` (its own VPC and, in a spoke, the hub over the
    peering) and HTTPS for Secrets Manager; nothing else.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnets: Sequence[ec2.ISubnet],
        rest_cidrs: Sequence[str],
    ) -> None:
        super().__init__(scope, construct_id)
        self.security_group = ec2.SecurityGroup(
            self,
            "Egress",
            vpc=vpc,
            description="CNQ provisioner: Qumulo REST and HTTPS out",
            allow_all_outbound=False,
        )
        for cidr in rest_cidrs:
            self.security_group.add_egress_rule(
                ec2.Peer.ipv4(cidr), ec2.Port.tcp(QUMULO_REST), "Qumulo REST API"
            )
        self.security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "Secrets Manager API")
        log_group = logs.LogGroup(
            self, "Logs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=RemovalPolicy.DESTROY
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description="Forms CNQ clusters and portals through Qumulo's REST API (custom resource)",
            runtime=RUNTIME,
            handler=HANDLER,
            code=provisioner_code(),
            timeout=HANDLER_TIMEOUT,
            memory_size=256,
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnets=list(subnets)),
            security_groups=[self.security_group],
            log_group=log_group,
        )
        provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.function,
            # The framework's own function runs in the VPC too (Control Tower CT.LAMBDA.PR.3); it calls the
            # Lambda and S3 APIs over the group's HTTPS egress.
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnets=list(subnets)),
            security_groups=[self.security_group],
            log_group=logs.LogGroup(
                self,
                "ProviderLogs",
                retention=logs.RetentionDays.ONE_YEAR,
                removal_policy=RemovalPolicy.DESTROY,
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
        function_id = Stack.of(self).get_logical_id(self.function.node.default_child)  # type: ignore[arg-type]
        acknowledge(
            self,
            "AwsSolutions-IAM5",
            reason="the CDK Provider framework may invoke any version of the provisioning handler, which is the "
            "function's own ARN suffixed with :*",
            findings=[f"Resource::<{function_id}.Arn>:*"],
        )
