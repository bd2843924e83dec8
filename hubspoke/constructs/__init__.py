"""Logical units composed by the stacks. Lives inside the package: a top-level `constructs/` would shadow the
`constructs` library that aws-cdk-lib imports."""
