"""The SageMaker HyperPod cluster on EKS: lifecycle scripts (lifecycle/, no CDK) and the constructs."""
