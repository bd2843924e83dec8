"""One environment as a CDK Stage: the stacks hubspoke.topology plans, wired in its deploy order, with policy."""

from __future__ import annotations

import hashlib
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

# One builder per stack kind: `builder(stage, plan, config=config) -> Stack`. Stacks exchange values only
# through named outputs (hubspoke.outputs), never through each other's objects.
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


def new_app(*, outdir: str | None = None) -> App:
    """The CDK App every hubspoke synth runs in: app.py, the tests and the benchmark alike.

    CDK's built-in CloudFormation validation plugin is off: it tripled synth time (benchmarks/) and repeats
    what cfn-lint, pinned and stricter, checks over every template in `make synth` and in the tests.
    cdk-nag and our pack still run inside every synth.
    """
    return App(outdir=outdir, builtin_cloud_formation_validation=False)


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
        Validations.of(self).add_plugins(AwsSolutionsChecks(self), HubSpokePolicy(config))

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
