"""The subcommands of `hubspoke`: what each does, and the import that loads it, known without importing any.

`hubspoke validate` must not pay for boto3, graphviz or matplotlib: main.py loads only the module of the
command being run (each loader below is an ordinary import a reader can follow) and lists the others by summary.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast


class CommandModule(Protocol):
    """What a command's module offers main.py: its parser, under the summary below, which sets
    `run(args) -> exit code` as default."""

    def add_parser(self, sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None: ...


@dataclass(frozen=True)
class Command:
    """One subcommand: the function that imports its module, and its one-line summary."""

    load: Callable[[], CommandModule]
    summary: str


def _validate() -> CommandModule:
    from hubspoke.cli import validate

    return cast(CommandModule, validate)


def _render() -> CommandModule:
    from hubspoke.cli import render

    return cast(CommandModule, render)


def _image() -> CommandModule:
    from hubspoke.cli import image

    return cast(CommandModule, image)


def _bench() -> CommandModule:
    from hubspoke.cli import bench

    return cast(CommandModule, bench)


def _plan() -> CommandModule:
    from hubspoke.cli import plan

    return cast(CommandModule, plan)


def _preflight() -> CommandModule:
    from hubspoke.cli import preflight

    return cast(CommandModule, preflight)


def _verify() -> CommandModule:
    from hubspoke.cli import verify

    return cast(CommandModule, verify)


def _connect() -> CommandModule:
    from hubspoke.cli import connect

    return cast(CommandModule, connect)


def _ami() -> CommandModule:
    from hubspoke.cli import ami

    return cast(CommandModule, ami)


def _cost() -> CommandModule:
    from hubspoke.cli import cost

    return cast(CommandModule, cost)


def _diagram() -> CommandModule:
    from hubspoke.cli import diagram

    return cast(CommandModule, diagram)


def _dataset() -> CommandModule:
    from hubspoke.cli import dataset

    return cast(CommandModule, dataset)


def _deploy() -> CommandModule:
    from hubspoke.cli import deploy

    return cast(CommandModule, deploy)


def _init() -> CommandModule:
    from hubspoke.cli import init

    return cast(CommandModule, init)


def _stage() -> CommandModule:
    from hubspoke.cli import stage_release

    return cast(CommandModule, stage_release)


def _teardown() -> CommandModule:
    from hubspoke.cli import teardown

    return cast(CommandModule, teardown)


def _train() -> CommandModule:
    from hubspoke.cli import train

    return cast(CommandModule, train)


COMMANDS: dict[str, Command] = {
    "init": Command(
        _init, "write a new environment file from your AWS identity and Regions (never overwrites one)"
    ),
    "stage": Command(
        _stage, "upload a downloaded Qumulo Core release to each Region's staging bucket and pin it"
    ),
    "validate": Command(_validate, "check config files without synthesizing"),
    "render": Command(_render, "print Kubernetes manifests for one Region (pipe to kubectl apply -f -)"),
    "image": Command(_image, "build the training image and push it to every compute Region by digest"),
    "bench": Command(_bench, "analyse cold/warm read benchmarks"),
    "plan": Command(
        _plan,
        "show the stacks, peerings, first-deploy duration, run-rate and deploy commands a config produces",
    ),
    "preflight": Command(_preflight, "check the AWS accounts and Regions before deploying (read-only)"),
    "verify": Command(
        _verify, "check a deployed environment against its config, with a fix per problem (read-only)"
    ),
    "connect": Command(
        _connect, "print the tunnel and kubeconfig commands that reach one Region's private EKS endpoint"
    ),
    "ami": Command(
        _ami, "print the current Ubuntu 24.04 image of each Region as the storage.ami_id line to paste"
    ),
    "cost": Command(_cost, "compare the cached hub-and-spoke path with full replication, per spoke"),
    "diagram": Command(_diagram, "draw the topology as SVG or PNG"),
    "dataset": Command(
        _dataset, "load a dataset version from S3 into the hub (Qumulo Shift-From) and seal it"
    ),
    "deploy": Command(
        _deploy,
        "bootstrap where needed, then run the plan's cdk deploy showing each stack's progress (rerun after a failure)",
    ),
    "train": Command(
        _train,
        "warm the spoke's cache, run the reference job to its end and export its checkpoint (tunnel included)",
    ),
    "teardown": Command(
        _teardown,
        "delete the environment's stacks in reverse order, then what they retained (dry run unless --yes)",
    ),
}
