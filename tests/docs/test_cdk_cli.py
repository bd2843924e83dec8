"""Facts tests/docs/cdk_cli.py relies on, re-read from the pinned CDK CLI so a bump cannot silently break them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs import cdk_cli
from tests.docs.cdk_cli import CDK, cdk_command, cdk_commands


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


def test_kept_help_is_read_back_not_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text kept for this build of the CLI is what _help answers: the CLI is not run again."""
    monkeypatch.setattr(cdk_cli, "HELP_CACHE", tmp_path)
    kept = tmp_path / cdk_cli.cli_build() / "cdk-deploy.txt"
    kept.parent.mkdir()
    kept.write_text("kept deploy help")
    assert cdk_cli._help("deploy") == "kept deploy help"


@pytest.mark.thorough
def test_every_kept_help_is_what_the_cli_prints_now() -> None:
    """Each text kept for this build of the CLI (in CI, by the fast tier's run before this one) is the one a
    fresh run of the CLI prints."""
    cdk_commands()  # keeps `cdk --help` at least
    kept = sorted((cdk_cli.HELP_CACHE / cdk_cli.cli_build()).glob("cdk*.txt"))
    assert kept
    for text in kept:
        assert cdk_cli.run_help(*text.stem.split("-")[1:]) == text.read_text(), text.name
