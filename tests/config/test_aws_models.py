"""The instance types the config accepts come from the installed botocore's service models, read as files.

Sources: botocore's data/sagemaker/2017-07-24/service-2.json (ClusterInstanceType lists ml.p5.48xlarge, the
reference run's type, and ml.p6-b200.48xlarge) and data/ec2/2016-11-15/service-2.json.gz (InstanceType lists
i4i.8xlarge); tests/cli/test_main.py: `hubspoke validate` imports no AWS SDK.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from hubspoke.config import aws_models


def test_the_models_list_the_reference_types() -> None:
    hyperpod = aws_models.enum("sagemaker", "ClusterInstanceType")
    assert {"ml.p5.48xlarge", "ml.p6-b200.48xlarge"} <= hyperpod
    assert "ml.p5.48xlage" not in hyperpod and "p5.48xlarge" not in hyperpod
    assert "i4i.8xlarge" in aws_models.enum("ec2", "InstanceType")


def test_a_type_not_listed_is_refused_with_the_nearest_listed_one() -> None:
    assert (
        aws_models.check("ml.p5.48xlarge", "sagemaker", "ClusterInstanceType", "a type") == "ml.p5.48xlarge"
    )
    with pytest.raises(ValueError, match=r"^'ml\.p5\.48xlage' is not a type \(botocore's sagemaker model, "):
        aws_models.check("ml.p5.48xlage", "sagemaker", "ClusterInstanceType", "a type")
    with pytest.raises(ValueError, match=r"pick one botocore's ec2 model lists \(InstanceType\)$"):
        aws_models.check("banana", "ec2", "InstanceType", "an EC2 instance type")


def test_reading_the_models_imports_no_sdk() -> None:
    code = (
        "import sys; from hubspoke.config import aws_models; aws_models.enum('ec2', 'InstanceType'); "
        "print('botocore' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
