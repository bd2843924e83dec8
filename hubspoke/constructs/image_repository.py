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
# Tagged images: every build `hubspoke image build` pushed (one per commit, one image manifest each: it turns
# off buildx's default attestation, which would push an index over untagged children; hubspoke/cli/image.py
# ONE_MANIFEST_BUILD). Rendered jobs reference one by
# digest, so a deleted image breaks every manifest that names it: keep many. ECR's lifecycle rule
# "imageCountMoreThan" expires the oldest beyond this count (Amazon ECR User Guide, "Lifecycle policy
# properties": tagStatus any, countType imageCountMoreThan).
KEEP_IMAGES = 100


class TrainingImageRepository(Construct):
    """A private ECR repository: generated name, immutable tags, scanned on push, own key, kept on delete.

    Example::

        repo = TrainingImageRepository(stack, "TrainingImages", config=config)
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: HubSpokeConfig) -> None:
        super().__init__(scope, construct_id)
        # Amazon ECR User Guide, "Encryption at rest": with a customer managed key, ECR sends two CreateGrant
        # requests when the repository is created, in the name of the principal that creates it (the
        # deployment role), which must hold kms:CreateGrant on the key. ASSUMED: those grants may reach KMS
        # without kms:GrantIsForAWSResource (KMS sets it when an integrated service calls CreateGrant, and ECR
        # calls in the creator's name; no page says which applies), so the key goes without the CT.KMS.PR.3 deny
        # that would refuse them under the second reading; without the deny, either reading succeeds.
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
            # No repository_name: CloudFormation generates one per create ("Name type"), so the repository a
            # rolled-back create or a deleted stack keeps never blocks the next create (DeletionPolicy attribute:
            # Retain keeps it; RetainExceptOnCreate would not free the name after a delete). `hubspoke image
            # build` reads the name from the stack's TrainingImageRepositoryUri output.
            # Control Tower CT.ECR.PR.2 (scan on push) and CT.ECR.PR.3 (immutable tags): a tag names one image
            # forever, so a job that references a tag runs what was tested under it.
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
