"""The Region's ECR repository for the training image: the only registry the Region's training jobs pull from."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_ecr as ecr
from constructs import Construct

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.keys import retained_key

# Untagged images are the layers of a tag pushed again (refused with IMMUTABLE tags) or of a build whose push
# failed half-way; nothing references them by tag. A week leaves time to find out why before they go.
UNTAGGED_DAYS = 7
# Jobs reference images by digest, so a deleted image breaks every manifest naming it: keep the newest 100
# (Amazon ECR User Guide, "Lifecycle policy properties": imageCountMoreThan). One manifest a build:
# hubspoke/cli/image.py ONE_MANIFEST_BUILD turns off buildx's attestation index.
KEEP_IMAGES = 100


class TrainingImageRepository(Construct):
    """A private ECR repository: generated name, immutable tags, scanned on push, own key, kept on delete.

    Example::

        repo = TrainingImageRepository(stack, "TrainingImages", config=config)
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: HubSpokeConfig) -> None:
        super().__init__(scope, construct_id)
        # ECR's CreateGrant calls come in the creator's name (Amazon ECR User Guide, "Encryption at rest").
        # ASSUMED: without kms:GrantIsForAWSResource, so no CT.KMS.PR.3 deny (docs/decisions.md, "Keys without
        # CT.KMS.PR.3").
        self.key = retained_key(
            self,
            "Key",
            description=f"hubspoke {config.environment}: encrypts the training images in ECR",
            caller_grants="Amazon ECR creates its grants on this key when the repository is created, in the name "
            "of the principal that creates the repository (Amazon ECR User Guide, 'Encryption at rest'); a "
            "deny of grants not flagged for an AWS resource would make repository creation fail.",
        )
        self.repository = ecr.Repository(
            self,
            "Repository",
            # A generated name ("Name type") so a retained repository (DeletionPolicy attribute) never blocks
            # the next create; `hubspoke image build` reads TrainingImageRepositoryUri. Control Tower
            # CT.ECR.PR.2 and CT.ECR.PR.3: a tag is one image.
            image_scan_on_push=True,
            image_tag_mutability=ecr.TagMutability.IMMUTABLE,
            encryption=ecr.RepositoryEncryption.KMS,
            encryption_key=self.key,
            # Images are data: a training run's manifest names its image by digest, and a checkpoint is only
            # reproducible with the image that wrote it. Deleting the stack must not delete them (and
            # CloudFormation could not delete a repository that holds images without emptying it first).
            removal_policy=RemovalPolicy.RETAIN,
            # Control Tower CT.ECR.PR.1: a lifecycle policy.
            lifecycle_rules=[
                ecr.LifecycleRule(
                    rule_priority=1,
                    description=f"untagged images go after {UNTAGGED_DAYS} days",
                    tag_status=ecr.TagStatus.UNTAGGED,
                    max_image_age=Duration.days(UNTAGGED_DAYS),
                ),
                ecr.LifecycleRule(
                    rule_priority=2,
                    description=f"keep the newest {KEEP_IMAGES} images",
                    tag_status=ecr.TagStatus.ANY,
                    max_image_count=KEEP_IMAGES,
                ),
            ],
        )
