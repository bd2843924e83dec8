"""Lambda code of the CNQ provisioning custom resource; bundled with the qumulo-api SDK (bundling.py)."""
