"""What the CNQ stacks and the provisioning Lambda agree on, importable without the Qumulo SDK or CDK.

The policy pack and the constructs read these names at synth; the Lambda reads them at run time. This module
imports nothing, so neither side loads the other's dependencies to learn a tag name.
"""

# Every node carries this tag with its cluster's name; the provisioner's EC2 permissions are scoped to it.
CLUSTER_TAG = "hubspoke:cnq-cluster"
# Written on the first node's instance when the cluster-create call was sent to it (runtime/cluster.py), so
# no later poll sends it again; the provisioner may set only this tag, on the stack's own nodes.
CREATE_SENT_TAG = "hubspoke:cnq-create-sent"
# Written on the same instance with the CloudFormation RequestId whose capacity clamp was sent: a clamp shows only
# in the next quorum, so later polls of that request read this instead of sending it again (runtime/capacity.py).
CLAMP_SENT_TAG = "hubspoke:cnq-clamp-sent"
