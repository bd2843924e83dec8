"""`load_environments`, what `cdk synth` runs first (app.py: `-c config=PATH`, else the config/ directory): a
directory is every *.yaml in it, in name order; every problem of every file comes out at once, each line
`PATH: field: problem` (docs/configuration.md); two files naming one environment are refused, since both
would deploy the same stacks (stack names are hubspoke-<environment>-...)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hubspoke.config import ConfigError, load_environments
from tests.conftest import ROOT, minimal, write_config


def refused(target: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_environments(target)
    return str(caught.value).splitlines()


def test_a_directory_is_every_yaml_file_in_it_in_name_order(tmp_path: Path) -> None:
    write_config(tmp_path, minimal(environment="prod"), "b-prod.yaml")
    write_config(tmp_path, minimal(environment="stage"), "a-stage.yaml")
    (tmp_path / "notes.txt").write_text("not a config")
    # A *.yml file is refused, not skipped (tests/cli/test_validate.py; issue 21 item 11).
    loaded = load_environments(tmp_path)
    assert [(item.path.name, item.config.environment) for item in loaded] == [
        ("a-stage.yaml", "stage"),
        ("b-prod.yaml", "prod"),
    ]


def test_the_default_target_is_the_repositorys_config_directory() -> None:
    assert [item.config.environment for item in load_environments(ROOT / "config")] == ["dev", "smoke"]


def test_one_environment_in_two_files_is_refused_naming_both(tmp_path: Path) -> None:
    first = write_config(tmp_path, minimal(environment="dev"), "a.yaml")
    second = write_config(tmp_path, minimal(environment="dev"), "b.yaml")
    assert refused(tmp_path) == [
        f"{second}: environment: 'dev' is also the environment of {first}; rename one"
    ]


def test_every_problem_of_every_file_at_once(tmp_path: Path) -> None:
    bad_cidr = minimal(environment="one")
    bad_cidr["hub"]["cidr"] = "10.10.0.0/8"
    write_config(tmp_path, bad_cidr, "one.yaml")
    (tmp_path / "two.yaml").write_text(
        "environment: two\naccount: '123456789012'\nhub: {region: us-east-2}\n"
    )
    write_config(tmp_path, minimal(environment="three"), "three.yaml")
    lines = refused(tmp_path)
    assert any(line.startswith(f"{tmp_path / 'one.yaml'}: hub.cidr: ") for line in lines), lines
    assert any(line.startswith(f"{tmp_path / 'two.yaml'}: hub.cidr: ") for line in lines), lines
    assert not any("three.yaml" in line for line in lines), "a valid file adds no line"


def test_a_directory_without_configs_says_what_to_add(tmp_path: Path) -> None:
    assert refused(tmp_path) == [
        f"{tmp_path}: (file): no *.yaml config in this directory; add config/<env>.yaml"
    ]


def test_one_file_is_that_file_alone(tmp_path: Path) -> None:
    path = write_config(tmp_path, minimal(environment="solo"), "solo.yaml")
    write_config(tmp_path, minimal(environment="solo"), "twin.yaml")  # not read: not the target
    assert [item.config.environment for item in load_environments(path)] == ["solo"]
