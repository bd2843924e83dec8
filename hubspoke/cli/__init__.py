"""The `hubspoke` command line. Loads config without jsii: nothing here imports aws_cdk."""
