"""What the dataset load Job (hubspoke/k8s/load.py) needs in the hub's cluster: its AWS role and its settings.

The Job runs as the service account SERVICE_ACCOUNT in the training namespace; an EKS Pod Identity association
gives its pods the role below (Amazon EKS API Reference, CreatePodIdentityAssociation: "The service account and
the pods that use the service account must be in this namespace"; the cluster runs the eks-pod-identity-agent
add-on, hubspoke/eks_addons.py CORE_ADDONS). The role may do only what the load calls: create and delete the
Shift user's access keys (hubspoke/shift_from.py IamKeys) and read the Qumulo login secret (workload/load.py).
The ConfigMap SETTINGS carries the hub's REST address, the Shift user's name and the secret's ARN, resolved at
deploy from the hub Storage stack, so `hubspoke dataset load` renders the Job without reading any stack.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from hubspoke.k8s.load import SERVICE_ACCOUNT, SETTING_KEYS, SETTINGS
from hubspoke.k8s.names import NAMESPACE
from hubspoke.k8s.storage import PART_OF


def shift_user_path(environment: str) -> str:
    """The IAM path hubspoke/constructs/shift.py gives the Shift user (tests/constructs/test_dataset_loader.py
    holds the two together): part of the user's ARN."""
    return f"/hubspoke/{environment}/"


class DatasetLoader(Construct):
    """The load Job's Pod Identity role, association, service account and settings in one cluster.

    Example::

        DatasetLoader(self, "DatasetLoader", cluster=eks_cluster, environment="dev", shift_user_name=user,
                      login_secret_arn=secret_arn, rest_address=floating_ip, after=storage_manifest)
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.Cluster,
        environment: str,
        shift_user_name: str,
        login_secret_arn: str,
        rest_address: str,
        after: Construct,
    ) -> None:
        super().__init__(scope, construct_id)
        # The trust EKS Pod Identity needs (sts:AssumeRole and sts:TagSession for pods.eks.amazonaws.com), narrowed
        # to this namespace and service account by the session tags the agent sets (EKS User Guide, "Create IAM
        # role with trust policy required by EKS Pod Identity").
        principal = iam.ServicePrincipal(
            "pods.eks.amazonaws.com",
            conditions={
                "StringEquals": {
                    "aws:RequestTag/kubernetes-namespace": NAMESPACE,
                    "aws:RequestTag/kubernetes-service-account": SERVICE_ACCOUNT,
                }
            },
        ).with_session_tags()
        self.role = iam.Role(
            self,
            "Role",
            description=f"EKS Pod Identity role of the dataset load Job ({NAMESPACE}/{SERVICE_ACCOUNT})",
            assumed_by=principal,
        )
        user_arn = Stack.of(self).format_arn(
            service="iam",
            region="",
            resource="user",
            resource_name=f"{shift_user_path(environment).strip('/')}/{shift_user_name}",
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        # One key per load, deleted when the version is sealed or the load is refused (IAM API Reference,
        # CreateAccessKey and DeleteAccessKey: resource type `user`).
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["iam:CreateAccessKey", "iam:DeleteAccessKey"], resources=[user_arn])
        )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[login_secret_arn])
        )
        self.association = eks.CfnPodIdentityAssociation(
            self,
            "Association",
            cluster_name=cluster.cluster_name,
            namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            role_arn=self.role.role_arn,
        )
        # The role's policies outlive the association (tests/test_role_grant_order.py).
        self.association.node.add_dependency(self.role)
        settings = {
            "rest-address": rest_address,
            "shift-user": shift_user_name,
            "secret-arn": login_secret_arn,
        }
        if set(settings) != set(SETTING_KEYS):  # the Job reads exactly these keys (hubspoke/k8s/load.py)
            raise ValueError(f"the load Job reads {sorted(SETTING_KEYS)}, not {sorted(settings)}")
        labels = {**PART_OF, "hubspoke/tool": "load"}
        self.manifest = cluster.add_manifest(
            "DatasetLoader",
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE, "labels": labels},
            },
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": SETTINGS, "namespace": NAMESPACE, "labels": labels},
                "data": settings,
            },
        )
        # The namespace comes with the Region's storage manifests.
        self.manifest.node.add_dependency(after)
