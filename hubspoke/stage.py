"""One environment as a CDK Stage: the stacks hubspoke.topology plans, wired in its deploy order, with policy."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable

from aws_cdk import (
    App,
    CfnWaitConditionHandle,
    CrossStackReferences,
    ReferenceStrength,
    Stack,
    Stage,
    Tags,
    Validations,
)
from cdk_nag import AwsSolutionsChecks
from constructs import Construct

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.policy.acks import acknowledge, acknowledge_lambdas_in_vpc, applied_at_end
from hubspoke.policy.control_tower import ControlTowerControls
from hubspoke.policy.plugin import HubSpokePolicy
from hubspoke.policy.rules import METADATA_KEY
from hubspoke.stacks.compute import build_compute
from hubspoke.stacks.dashboard import build_dashboard
from hubspoke.stacks.link import build_link, build_peer_access
from hubspoke.stacks.network import build_network
from hubspoke.stacks.ops import build_ops
from hubspoke.stacks.storage import build_storage
from hubspoke.topology import (
    ENVIRONMENT_TAG,
    REGION_TAG,
    STACK_TAG,
    StackKind,
    StackPlan,
    plan_stacks,
    stage_id,
)

# One builder per stack kind: `builder(stage, plan, config=config) -> Stack`. A stack uses the attributes of
# stacks built before it (stacks.base.sibling) and CDK carries each as a weak reference.
Builder = Callable[..., Stack]
# `cdk deploy -c refresh=<token>`: re-resolve the weak references of the stacks deployed (see _refresh).
REFRESH_CONTEXT = "refresh"
BUILDERS: dict[StackKind, Builder] = {
    "network": build_network,
    "peer-access": build_peer_access,
    "link": build_link,
    "storage": build_storage,
    "compute": build_compute,
    "ops": build_ops,
    "dashboard": build_dashboard,
}


# CDK feature flags every synth (app.py and the tests alike) needs, beyond cdk.json's weak references:
# server access logs delivered under a bucket policy instead of the legacy LogDeliveryWrite ACL, which
# cfn-lint flags (W3045) and Control Tower's CT.S3.PR.5 refuses (aws-cdk-lib FEATURE_FLAGS.md).
# No creation stack trace in cdk.out's metadata: from a Python app it holds only the jsii kernel's own frames
# ("...jsii runtime, node internals...", one per resource, seen in every *.metadata.json), and capturing it
# was a tenth of a synth. `cdk synth --debug` still records it with Python's frames (the CLI sets CDK_DEBUG and
# JSII_HOST_STACK_TRACES; aws-cdk-lib core/lib/cfn-element.js records when this is unset or debug mode is on).
CONTEXT = {
    "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True,
    "aws:cdk:disable-creation-stack-traces": True,
}
# The app itself fails on an unacknowledged finding, whoever runs it. The pinned CDK CLI (2.1148.1,
# lib/index.js contextFromSettings) passes "@aws-cdk/core:failSynthOnValidationErrors": false and reads
# cdk.out/validation-report.json itself, but only for the stacks it selected: `cdk synth` of an app whose
# stacks all live in a Stage selects none, so findings were printed nowhere and synth exited 0. Set after
# the CLI's context (App postCliContext), this makes aws-cdk-lib throw "Validation failed" instead
# (core/lib/private/synthesis-validation.js).
FAIL_ON_FINDINGS = {"@aws-cdk/core:failSynthOnValidationErrors": True}
# What the pinned CDK CLI adds to cdk.json's context when it runs app.py (aws-cdk 2.1148.1, lib/index.js
# contextFromSettings, every setting at its default): resource path and asset metadata, the CDKMetadata
# version-reporting resource, bundling for every stack, and validation errors left to the CLI. app.py gets it
# from the CLI; the tests and benchmarks/synth_scaling.py pass it themselves, so that they synthesize the
# templates `cdk synth` writes.
CLI_CONTEXT = {
    "aws:cdk:enable-path-metadata": True,
    "aws:cdk:enable-asset-metadata": True,
    "aws:cdk:version-reporting": True,
    "aws:cdk:bundling-stacks": ["**"],
    "@aws-cdk/core:failSynthOnValidationErrors": False,
}


def new_app(*, outdir: str | None = None) -> App:
    """The CDK App every hubspoke synth runs in: app.py, the tests and the benchmark alike.

    CDK's built-in CloudFormation validation plugin is off: it tripled synth time (benchmarks/) and repeats
    what cfn-lint, pinned and stricter, checks over every template in `make synth` and in the tests.
    cdk-nag and our pack still run inside every synth.
    """
    return App(
        outdir=outdir,
        builtin_cloud_formation_validation=False,
        context=CONTEXT,
        post_cli_context=FAIL_ON_FINDINGS,
    )


def synth_or_exit(app: App) -> None:
    """Synthesize `app`; on an unacknowledged finding, exit 1 after CDK's report instead of with a traceback.

    aws-cdk-lib prints the policy report, then throws "ValidationFailed" (FAIL_ON_FINDINGS above;
    core/lib/private/synthesis-validation.js): the report is the message, a jsii traceback only buries it.
    """
    try:
        app.synth()
    except RuntimeError as exc:
        if "ValidationFailed" not in str(exc):
            raise
        print(f"synth stopped: {exc}. Fix each finding above, or accept it with a reason through "
              "hubspoke/policy/acks.py.", file=sys.stderr)  # fmt: skip
        sys.exit(1)


def selection_hint(stages: list[str]) -> str:
    """What to type instead of `cdk deploy --all`, which selects nothing in this app.

    The pinned CDK CLI (aws-cdk 2.1148.1, lib/index.js) selects with --all only the stacks of the main cloud
    assembly ("main-assembly" strategy) and fails with "No stack found in the main cloud assembly" when every
    stack is in a Stage, as here; a pattern on the Stage's path selects them. The CLI does not tell the app what
    it was asked to select, so the app says this on every run under the CLI (CDK_CLI_VERSION is set).
    """
    patterns = " ".join(f"'{name}/*'" for name in stages)
    return (
        f"hubspoke: the stacks live in the CDK Stage(s) {', '.join(stages)}, so `cdk deploy --all` selects none. "
        f"Select an environment by its Stage path: npx cdk deploy -c config=<config-file> --require-approval never "
        f"{patterns} (`hubspoke plan --config <config-file>` prints the exact command, with --concurrency)."
    )


class HubSpokeStage(Stage):
    """Every stack of one environment, across its Regions and accounts.

    Example::

        app = App()
        HubSpokeStage(app, config=load("config/dev.yaml").config)
        app.synth()
    """

    def __init__(self, scope: Construct, *, config: HubSpokeConfig) -> None:
        super().__init__(scope, stage_id(config))
        self.config = config
        # Weak references (Fn::GetStackOutput) everywhere: no Lambda-backed export writers across
        # Regions, and no exports that lock a producer stack (aws-cdk #27902, #34813).
        CrossStackReferences.of(self).consume(ReferenceStrength.WEAK)
        # Acknowledgments wait in Python and are applied in one walk once every stack exists, not by an aspect
        # that calls back into Python for each construct (hubspoke.policy.acks).
        with applied_at_end(self):
            self.stacks: dict[str, Stack] = {}
            for plan in plan_stacks(config):
                builder = BUILDERS.get(plan.kind)
                if builder is None:
                    raise ValueError(
                        f"hubspoke.topology plans a {plan.kind} stack, but stage.BUILDERS cannot build one"
                    )
                stack = builder(self, plan, config=config)
                for dep in plan.depends_on:
                    if dep not in self.stacks:
                        raise ValueError(f"stack {plan.id} depends on {dep}, which is not planned before it")
                    stack.add_stack_dependency(self.stacks[dep])
                self._describe(stack, plan)
                self._refresh(stack)
                self.stacks[plan.id] = stack
            self._accept_environment_wide_findings()
        # cdk-nag, Control Tower's proactive controls (the cfn-guard rules its hooks run; the plugin ships the
        # cfn-guard binary) and our pack; any finding not acknowledged through hubspoke.policy.acks stops synth.
        Validations.of(self).add_plugins(
            AwsSolutionsChecks(self),
            ControlTowerControls(),
            HubSpokePolicy(config),
        )

    def _accept_environment_wide_findings(self) -> None:
        """Findings this project accepts for every resource of a kind, each with the reason (docs/policy.md)."""
        acknowledge_lambdas_in_vpc(self)
        no_customer_key = (
            "CloudWatch Logs encrypts every log group at rest with keys it manages (CloudWatch Logs User Guide, "
            "'Encrypt log data in CloudWatch Logs using AWS KMS'); these groups hold flow records, probe results, "
            "installer and provisioning traces and training metrics: no dataset content and no secrets."
        )
        acknowledge(self, "CT.CLOUDWATCH.PR.3", reason=no_customer_key)
        acknowledge(self, "CKV_AWS_158", reason=no_customer_key, resource_types=["AWS::Logs::LogGroup"])
        functions = ["AWS::Lambda::Function"]
        acknowledge(
            self,
            "CKV_AWS_115",
            reason="No function reserves concurrency unless ops.reserve_canary_concurrency opts in: Lambda keeps "
            "100 executions unreserved, so accounts with a low limit refuse any reservation (HubSpoke-"
            "ReservedConcurrency; Lambda Developer Guide, 'Configuring reserved concurrency').",
            resource_types=functions,
        )
        acknowledge(
            self,
            "CKV_AWS_116",
            reason="No function has events worth keeping: CloudFormation invokes custom-resource functions "
            "asynchronously with a callback URL (Lambda Developer Guide, 'Using AWS Lambda with CloudFormation'), "
            "so a request parked in a queue would answer nobody and the resource fails at its ServiceTimeout "
            "anyway; provider handlers are invoked synchronously by their framework; the canary runs every "
            "minute and a failed run shows as a missing datapoint, which its alarms treat as breaching.",
            resource_types=functions,
        )
        acknowledge(
            self,
            "CKV_AWS_173",
            reason="Environment variables hold names, ARNs, addresses and ports, never secrets (the canary and the "
            "provisioner read passwords from Secrets Manager at run time); Lambda encrypts them at rest with an "
            "AWS managed key.",
            resource_types=functions,
        )

    def _refresh(self, stack: Stack) -> None:
        """With `-c refresh=<token>`, give every stack a resource named after the token, so deploying it is an
        update even when nothing else changed.

        Fn::GetStackOutput is "resolved at stack create or update time" and a consumer "is not automatically
        updated" when the output changes (CloudFormation Template Reference, Fn::GetStackOutput); the CDK CLI
        and CloudFormation both skip a deploy whose template is unchanged. ASSUMED: an update re-resolves every
        Fn::GetStackOutput of the template, not only those of changed resources; `hubspoke verify` reports a
        reader older than its producer either way. A WaitConditionHandle has no properties and costs nothing.
        """
        token = self.node.try_get_context(REFRESH_CONTEXT)
        if token:
            digest = hashlib.sha256(str(token).encode()).hexdigest()[:12]
            CfnWaitConditionHandle(stack, f"WeakReferenceRefresh{digest}")

    def _describe(self, stack: Stack, plan: StackPlan) -> None:
        stack.template_options.metadata = {
            METADATA_KEY: {
                "environment": self.config.environment,
                "kind": plan.kind,
                "region": plan.region,
                **({"spoke": plan.spoke} if plan.spoke else {}),
            }
        }
        tags = {
            ENVIRONMENT_TAG: self.config.environment,
            REGION_TAG: plan.region,
            STACK_TAG: plan.kind,
            **self.config.tags,
        }
        for key, value in tags.items():
            Tags.of(stack).add(key, value)
