"""Which AWS CLI v2 commands have their argument table changed by a customization, so the checker can refuse a
command whose change it has not transcribed instead of judging it against botocore's model alone.

Source: aws/aws-cli branch v2 at 73fb33bb171ace3e9eaa03308f76e5de50c21393, awscli/handlers_registry.py
PLUGIN_REGISTRY: every `building-argument-table.<service>.<operation>` entry (and `<service>.*`, `*`), by the
module under awscli/customizations/ that it loads. Transcribed as data; update it with the pin.
"""

from __future__ import annotations

from functools import cache

# module -> the argument tables it changes ("<cli service>.<cli operation>", "<service>.*" or "*").
ARGUMENT_TABLE_HANDLERS: dict[str, tuple[str, ...]] = {
    "argrename": (
        "agent-toolkit.*", "agent-toolkit.search-skills", "apigateway.create-rest-api", "apigatewayv2.create-api",
        "apigatewayv2.update-api", "clouddirectory.publish-schema", "cloudsearchdomain.search",
        "cloudsearchdomain.suggest", "codepipeline.create-custom-action-type",
        "codepipeline.delete-custom-action-type", "codepipeline.get-action-type", "codepipeline.get-pipeline",
        "controltower.create-landing-zone", "controltower.update-landing-zone", "datapipeline.*",
        "datapipeline.get-pipeline-definition", "deploy.*", "ec2.*", "ec2.create-image", "ecs.*",
        "ecs.execute-command", "eks.create-cluster", "eks.create-nodegroup", "eks.update-cluster-components-version",
        "eks.update-cluster-version", "eks.update-nodegroup-version", "elasticache.create-replication-group",
        "emr.*", "gamelift.create-build", "gamelift.create-script", "gamelift.update-build",
        "gamelift.update-script", "glue.get-unfiltered-partition-metadata",
        "glue.get-unfiltered-partitions-metadata", "glue.get-unfiltered-table-metadata", "iotwireless.*",
        "kinesisanalytics.add-application-output", "kinesisanalyticsv2.add-application-output",
        "lex-models.delete-bot", "lex-models.delete-bot-version", "lex-models.delete-intent",
        "lex-models.delete-intent-version", "lex-models.delete-slot-type", "lex-models.delete-slot-type-version",
        "lex-models.get-export", "lex-models.get-intent", "lex-models.get-slot-type",
        "license-manager.delete-grant", "license-manager.get-grant", "license-manager.get-license", "mgn.*",
        "mturk.list-qualification-types", "pinpoint.delete-email-template", "pinpoint.delete-in-app-template",
        "pinpoint.delete-push-template", "pinpoint.delete-sms-template", "pinpoint.delete-voice-template",
        "pinpoint.get-campaign-version", "pinpoint.get-email-template", "pinpoint.get-in-app-template",
        "pinpoint.get-push-template", "pinpoint.get-segment-version", "pinpoint.get-sms-template",
        "pinpoint.get-voice-template", "pinpoint.update-email-template", "pinpoint.update-in-app-template",
        "pinpoint.update-push-template", "pinpoint.update-sms-template", "pinpoint.update-voice-template",
        "rekognition.create-stream-processor", "route53.delete-traffic-policy", "route53.get-traffic-policy",
        "route53.update-traffic-policy-comment", "route53domains.view-billing", "sagemaker.delete-image-version",
        "sagemaker.describe-image-version", "sagemaker.list-aliases", "sagemaker.update-image-version",
        "schemas.*", "sns.subscribe", "stepfunctions.send-task-success", "swf.register-activity-type",
        "swf.register-workflow-type", "workdocs.create-notification-subscription", "workdocs.describe-users",
    ),
    "awslambda": ("lambda.create-function", "lambda.publish-layer-version", "lambda.update-function-code"),
    "cloudfront": ("cloudfront.create-distribution", "cloudfront.create-invalidation", "cloudfront.update-distribution"),
    "cloudsearch": ("cloudsearch.define-expression", "cloudsearch.define-index-field"),
    "codedeploy/codedeploy": ("deploy.create-deployment", "deploy.get-application-revision", "deploy.register-application-revision"),
    "configservice/putconfigurationrecorder": ("configservice.put-configuration-recorder",),
    "datapipeline": ("datapipeline.activate-pipeline", "datapipeline.put-pipeline-definition"),
    "ec2/addcount": ("ec2.run-instances",),
    "ec2/bundleinstance": ("ec2.bundle-instance",),
    "ec2/decryptpassword": ("ec2.get-password-data",),
    "ec2/runinstances": ("ec2.run-instances",),
    "ec2/secgroupsimplify": (
        "ec2.authorize-security-group-egress", "ec2.authorize-security-group-ingress",
        "ec2.revoke-security-group-egress", "ec2.revoke-security-group-ingress",
    ),
    "ecs/monitormutatinggatewayservice": (
        "ecs.create-express-gateway-service", "ecs.delete-express-gateway-service",
        "ecs.update-express-gateway-service",
    ),
    "emr/emr": ("emr.add-tags", "emr.list-clusters"),
    "iamvirtmfa": ("iam.create-virtual-mfa-device",),
    "iot": ("iot.create-certificate-from-csr", "iot.create-keys-and-certificate"),
    "kinesis": ("kinesis.list-streams",),
    "putmetricdata": ("cloudwatch.put-metric-data",),
    "quicksight": ("quicksight.start-asset-bundle-import-job",),
    "rds": ("rds.add-option-to-option-group", "rds.remove-option-from-option-group"),
    "rekognition": ("rekognition.*", "rekognition.compare-faces"),
    "s3events": ("s3api.select-object-content",),
    "sessendemail": ("ses.send-email",),
    "streamingoutputarg": ("*",),
    "toplevelbool": ("ec2.*",),
    "translate": ("translate.import-terminology", "translate.translate-document"),
}  # fmt: skip


# Services whose command table a customization changes (handlers_registry.py `building-command-table.<service>`):
# commands added by hand, removed, or renamed.
COMMAND_TABLE_SERVICES = frozenset({
    "agent-toolkit", "bedrock-agent-runtime", "bedrock-agentcore", "bedrock-runtime", "cli-dev", "cloudformation",
    "cloudfront", "cloudtrail", "cloudwatch", "codeartifact", "codecommit", "configservice", "configure",
    "connecthealth", "datapipeline", "deploy", "devops-agent", "dlm", "dsql", "dynamodb", "ec2",
    "ec2-instance-connect", "ecr", "ecr-public", "ecs", "eks", "emr", "emr-containers", "events", "gamelift", "iam",
    "iotsitewise", "kinesis", "lambda", "lexv2-runtime", "lightsail", "logs", "polly", "qbusiness", "rds",
    "sagemaker-runtime", "servicecatalog", "ses", "signin", "ssm", "sso",
})  # fmt: skip
# What those customizations do, for the services transcribed here (complete for each): a name -> "custom" (a
# hand-written command: tests/docs/aws_customizations.py CUSTOM_COMMANDS must define it) or "removed".
COMMAND_TABLE_CHANGES: dict[str, dict[str, str]] = {
    # customizations/cloudformation/__init__.py inject_commands
    "cloudformation": {"package": "custom", "deploy": "custom"},
    # customizations/cloudwatch.py rename_otel_commands: get-o-tel-enrichment (and start-, stop-) become
    # get-otel-enrichment, which is already how the pinned botocore's xform_name spells GetOTelEnrichment.
    "cloudwatch": {},
    # customizations/removals.py
    "ec2": {"import-instance": "removed", "import-volume": "removed"},
    # customizations/eks/__init__.py inject_commands
    "eks": {"update-kubeconfig": "custom", "get-token": "custom"},
    # customizations/removals.py; customizations/logs/__init__.py
    "logs": {"get-log-object": "removed", "tail": "custom", "start-live-tail": "custom"},
    # customizations/sessionmanager.py add_custom_start_session
    "ssm": {"start-session": "custom"},
    # customizations/wizard/commands.py
    "iam": {"wizard": "custom"},
    "configure": {"wizard": "custom"},
}


@cache
def _by_target() -> dict[str, frozenset[str]]:
    targets: dict[str, set[str]] = {}
    for module, keys in ARGUMENT_TABLE_HANDLERS.items():
        for key in keys:
            targets.setdefault(key, set()).add(module)
    return {key: frozenset(modules) for key, modules in targets.items()}


def handlers(service: str, operation: str) -> frozenset[str]:
    """Every customization module that changes the argument table of `aws <service> <operation>`."""
    found = _by_target()
    return (
        found.get(f"{service}.{operation}", frozenset()) | found.get(f"{service}.*", frozenset()) | found["*"]
    )
