"""GPUs and EFA interfaces per HyperPod instance type: what a training pod asks the device plugins for."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Accelerator:
    """The devices one node of an instance type exposes to Kubernetes."""

    gpus: int
    efa_interfaces: int


# EC2 accelerated computing instance specs (network cards with EFA); HyperPod prefixes them with "ml.".
# A pod that asks for fewer EFA devices than the node has leaves bandwidth unused, so jobs take them all.
ACCELERATORS: dict[str, Accelerator] = {
    "ml.p5.48xlarge": Accelerator(gpus=8, efa_interfaces=32),
    "ml.p5e.48xlarge": Accelerator(gpus=8, efa_interfaces=32),
    "ml.p5en.48xlarge": Accelerator(gpus=8, efa_interfaces=16),
    "ml.p4d.24xlarge": Accelerator(gpus=8, efa_interfaces=4),
    "ml.p4de.24xlarge": Accelerator(gpus=8, efa_interfaces=4),
}


class UnknownAccelerator(ValueError):
    """An instance type whose GPU and EFA counts hubspoke does not know."""


def accelerator(instance_type: str) -> Accelerator:
    try:
        return ACCELERATORS[instance_type]
    except KeyError:
        known = ", ".join(sorted(ACCELERATORS))
        raise UnknownAccelerator(
            f"{instance_type} has no GPU/EFA entry; use one of {known}, or add it to "
            "hubspoke/k8s/accelerators.py with its EC2-documented counts"
        ) from None
