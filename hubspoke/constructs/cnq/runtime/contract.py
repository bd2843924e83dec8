"""The tag keys the provisioning Lambda reads and writes, as the construct that deploys it states them.

The keys' one home is hubspoke/names.py; the runtime ships alone (it imports nothing of hubspoke), so
constructs/cnq/provisioning.py hands them to it in the function's environment, where the template shows them.
"""

import os

CLUSTER_TAG_ENV = "HUBSPOKE_CNQ_CLUSTER_TAG"
CREATE_SENT_TAG_ENV = "HUBSPOKE_CNQ_CREATE_SENT_TAG"
CLAMP_SENT_TAG_ENV = "HUBSPOKE_CNQ_CLAMP_SENT_TAG"


def _stated(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(
            f"{name} is not set: the function's environment comes from constructs/cnq/provisioning.py"
        )
    return value


def cluster_tag() -> str:
    """The tag every node carries with its cluster's name."""
    return _stated(CLUSTER_TAG_ENV)


def create_sent_tag() -> str:
    """The tag that records, on the first node, that the cluster-create call was sent."""
    return _stated(CREATE_SENT_TAG_ENV)


def clamp_sent_tag() -> str:
    """The tag that records, on the first node, the request whose capacity clamp was sent."""
    return _stated(CLAMP_SENT_TAG_ENV)
