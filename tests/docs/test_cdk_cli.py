"""Facts tests/docs/cdk_cli.py relies on, re-read from the pinned CDK CLI so a bump cannot silently break them."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.docs.cdk_cli import CDK, _help, cdk_command, cdk_commands


def test_every_array_option_takes_one_value_per_occurrence() -> None:
    source = (CDK.parent.parent / "aws-cdk" / "lib" / "cli" / "parse-command-line-arguments.js").read_text()
    blocks = re.findall(r"\.option\('([\w-]+)', \{(.*?)\}\)", source, flags=re.S)
    arrays = [(name, body) for name, body in blocks if "type: 'array'" in body]
    assert arrays, "the CLI's option table moved; re-read how its array options take values"
    assert [name for name, body in arrays if "nargs: 1" not in body] == []


def test_help_is_read_into_commands_options_and_positionals() -> None:
    # What `npx cdk --help` and `npx cdk deploy --help` of aws-cdk 2.1148.1 print (package.json pins it).
    assert {"deploy", "diff", "drift", "destroy", "bootstrap", "synth"} <= set(cdk_commands())
    assert cdk_commands()["synthesize"] == "synth"
    deploy = cdk_command("deploy")
    assert deploy.options["--context"] == deploy.options["-c"] == "array"
    assert deploy.options["--revert-drift"] == "boolean"
    assert deploy.max_positionals is None
    assert "--revert-drift" not in cdk_command("diff").options
    # `--require-approval ... [string] [choices: "never", "any-change", "broadening", "destructive"]`, on the
    # line after the option's name: choices are read from the option's whole (wrapped) help text.
    assert deploy.choices["--require-approval"] == ("never", "any-change", "broadening", "destructive")
    assert deploy.options["--require-approval"] == "string"


@pytest.mark.thorough
def test_the_kept_help_is_what_the_cli_prints_now() -> None:
    """_help keeps each text per build of the CLI; a kept text must be the one a fresh run prints."""
    kept = _help("deploy")
    env = {**os.environ, "PATH": f"{CDK.parent}{os.pathsep}{os.environ.get('PATH', '')}", "CI": "true"}
    fresh = subprocess.run(
        [str(CDK), "deploy", "--help"], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    assert fresh.stdout == kept
