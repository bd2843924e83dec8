"""The hub-outage canary: a Lambda in the spoke VPC, run every minute, that probes the hub and reads the portal."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from hubspoke import canary_metrics as metrics
from hubspoke.constructs.canary.runtime.handler import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_REST_TIMEOUT_S
from hubspoke.constructs.cnq.bundling import RUNTIME, bundled_code
from hubspoke.ports import QUMULO_REST

RUNTIME_DIR = Path(__file__).parent
# The hubspoke modules the asset carries beside the runtime package (standard library only).
RUNTIME_FACTS = ("canary_metrics",)
# RUNTIME: the bundle is resolved for that Python (dependency markers), so the canary runs on the provisioner's.
# Probes and the REST read run in parallel; this leaves room for both timeouts, a cold start and the SDK import.
FUNCTION_TIMEOUT = Duration.seconds(30)


class HubCanary(Construct):
    """Probes the hub's floating IPs on `ports` from `subnets` every minute and publishes HubSpoke/Canary metrics.

    Example::

        canary = HubCanary(stack, "Canary", vpc=net.vpc, subnets=net.private_subnets, environment="dev",
                           spoke="us-west-2", hub_addresses=ips, hub_cidrs=["10.10.0.0/16"],
                           ports=[NFS, QUMULO_PORTAL], code=runtime_code())
        canary.metric(metrics.HUB_REACHABLE)
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnets: Sequence[ec2.ISubnet],
        environment: str,
        spoke: str,
        hub_addresses: str,
        hub_cidrs: Sequence[str],
        ports: Sequence[int],
        code: lambda_.Code,
        spoke_rest_address: str | None = None,
        spoke_rest_port: int = QUMULO_REST,
        admin_secret_arn: str | None = None,
        # A year: Control Tower CT.CLOUDWATCH.PR.2 refuses log groups kept for less.
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_YEAR,
        reserved_concurrency: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.environment = environment
        self.spoke = spoke
        self.ports = tuple(ports)
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            description="Hub canary: TCP to the hub floating IPs, REST to the local CNQ, HTTPS to AWS APIs",
            allow_all_outbound=False,
        )
        for cidr in hub_cidrs:
            for port in ports:
                self.security_group.add_egress_rule(
                    ec2.Peer.ipv4(cidr), ec2.Port.tcp(port), f"probe hub {port}"
                )
        self.security_group.add_egress_rule(
            ec2.Peer.ipv4(vpc.vpc_cidr_block), ec2.Port.tcp(spoke_rest_port), "spoke CNQ REST API"
        )
        # Secrets Manager through the Region's NAT or an interface endpoint; both are HTTPS.
        self.security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "Secrets Manager API")

        self.log_group = logs.LogGroup(
            self,
            "Logs",
            retention=log_retention,
            # Probe results only, no dataset content: the metrics they carry outlive the group in CloudWatch.
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"hubspoke canary in {spoke}: VPC networking, its own log group, the spoke admin secret",
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler="runtime.handler.handler",
            code=code,
            timeout=FUNCTION_TIMEOUT,
            memory_size=256,
            role=self.role,
            log_group=self.log_group,
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnets=list(subnets)),
            security_groups=[self.security_group],
            # Reserved only when ops.reserve_canary_concurrency opts in: accounts with a low limit refuse any
            # (Lambda Developer Guide, "Configuring reserved concurrency"); runs do not overlap
            # (FUNCTION_TIMEOUT).
            reserved_concurrent_executions=reserved_concurrency,
            environment={
                "HUBSPOKE_ENVIRONMENT": environment,
                "SPOKE_REGION": spoke,
                "HUB_ADDRESSES": hub_addresses,
                "HUB_PORTS": ",".join(str(p) for p in ports),
                "CONNECT_TIMEOUT_SECONDS": str(DEFAULT_CONNECT_TIMEOUT_S),
                "REST_TIMEOUT_SECONDS": str(DEFAULT_REST_TIMEOUT_S),
                **({"SPOKE_REST_ADDRESS": spoke_rest_address} if spoke_rest_address else {}),
                "SPOKE_REST_PORT": str(spoke_rest_port),
                **({"ADMIN_SECRET_ARN": admin_secret_arn} if admin_secret_arn else {}),
            },
            description=f"hubspoke {environment}: hub-outage canary for spoke {spoke}",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )
        # Lambda attaches ENIs in the VPC; these EC2 actions do not support resource-level scoping.
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "ec2:CreateNetworkInterface",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DeleteNetworkInterface",
                    "ec2:AssignPrivateIpAddresses",
                    "ec2:UnassignPrivateIpAddresses",
                ],
                resources=["*"],
            )
        )
        if admin_secret_arn:
            self.role.add_to_policy(
                iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[admin_secret_arn])
            )
        self.schedule = events.Rule(
            self,
            "EveryMinute",
            schedule=events.Schedule.rate(Duration.minutes(1)),
            targets=[targets.LambdaFunction(self.function, retry_attempts=0)],
            description=f"hubspoke {environment}: run the hub canary of {spoke} every minute",
        )

    def metric(
        self, name: str, *, statistic: str = "Minimum", period: Duration | None = None
    ) -> cloudwatch.Metric:
        """One of the canary's metrics (names in hubspoke/canary_metrics.py) for this spoke."""
        return canary_metric(
            name, environment=self.environment, spoke=self.spoke, statistic=statistic, period=period
        )


def canary_metric(
    name: str, *, environment: str, spoke: str, statistic: str = "Minimum", period: Duration | None = None
) -> cloudwatch.Metric:
    """A canary metric of `spoke`, read from anywhere (the hub's dashboard too): it lives in the spoke's Region."""
    if name not in metrics.UNITS:
        raise ValueError(f"{name} is not published by the canary; see hubspoke/canary_metrics.py")
    return cloudwatch.Metric(
        namespace=metrics.NAMESPACE,
        metric_name=name,
        dimensions_map={metrics.DIMENSION_ENVIRONMENT: environment, metrics.DIMENSION_SPOKE: spoke},
        statistic=statistic,
        period=period or Duration.minutes(1),
        region=spoke,
    )


def runtime_code() -> lambda_.Code:
    """The Lambda asset: the `runtime` package (handler `runtime.handler.handler`), the qumulo-api SDK, and
    hubspoke/canary_metrics.py, the names it publishes under, which the Ops stack and verify read too.

    Bundled at synth from the installed environment, as the CNQ provisioner is: offline, no Docker, only
    pure-Python distributions, and the hash follows the bundle so an SDK upgrade ships a new asset.
    """
    return bundled_code(RUNTIME_DIR / "runtime", "runtime", facts=RUNTIME_FACTS)
