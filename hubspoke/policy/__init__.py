"""Policy checks that run inside synth: cdk-nag's AwsSolutions pack and our own rule pack."""
