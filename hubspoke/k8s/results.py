"""A short-lived pod that mounts the checkpoint volume read-only, so results files can be copied off it.

The bench and prewarm Jobs write their results to the checkpoint volume, and a finished Job's pod has no
running container to exec into (Kubernetes docs, "Get a Shell to a Running Container": exec needs a running
container): this pod is what `kubectl exec ... cat` reads them through when no training pod runs. `cat` is
coreutils', an Essential package of the Ubuntu that AWS's pytorch-training images are built on; ASSUMED for
any other base.
"""

from __future__ import annotations

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.k8s.cpu_job import hardened, image_for, tool_labels
from hubspoke.k8s.names import CHECKPOINT_CLAIM, CHECKPOINT_MOUNT_PATH, NAMESPACE
from hubspoke.k8s.storage import Manifest

POD_NAME = "hubspoke-results"
DEFAULT_HOURS = 1


def results_pod(
    config: HubSpokeConfig, region: RegionConfig, *, hours: int = DEFAULT_HOURS, image: str | None = None
) -> Manifest:
    """The pod: idle for `hours`, then ended by Kubernetes (activeDeadlineSeconds), never restarted."""
    seconds = hours * 3600
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": POD_NAME,
            "namespace": NAMESPACE,
            "labels": tool_labels(config, region, "results"),
        },
        "spec": {
            "restartPolicy": "Never",
            # The pod is a door left open on the volume: it closes itself even when nobody deletes it.
            "activeDeadlineSeconds": seconds,
            "containers": [
                {
                    "name": "results",
                    "image": image_for(config, region, image),
                    "imagePullPolicy": "IfNotPresent",
                    # The training image's python, so the pod needs nothing the image does not hold.
                    "command": ["python", "-c", f"import time; time.sleep({seconds})"],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                        "limits": {"memory": "128Mi"},
                    },
                    "securityContext": hardened(),
                    "volumeMounts": [
                        {"name": "checkpoints", "mountPath": CHECKPOINT_MOUNT_PATH, "readOnly": True}
                    ],
                }
            ],
            "volumes": [
                {
                    "name": "checkpoints",
                    "persistentVolumeClaim": {"claimName": CHECKPOINT_CLAIM, "readOnly": True},
                }
            ],
        },
    }
