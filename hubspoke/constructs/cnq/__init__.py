"""Cloud Native Qumulo: the cluster construct and its provisioning custom resource (runtime/)."""
