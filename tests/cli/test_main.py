"""The command line loads only what the command being run needs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hubspoke.cli.commands import COMMANDS
from hubspoke.cli.main import build_parser, main
from tests.conftest import ROOT
from tests.fakes.loopback import serve_in_background, shut

HEAVY = ("botocore", "boto3", "graphviz", "wasmtime", "matplotlib", "aws_cdk", "jsii")


def test_validate_imports_no_aws_sdk_or_renderer() -> None:
    """`hubspoke validate` runs in CI and pre-commit hooks: no boto3, botocore, graphviz, matplotlib or CDK."""
    code = (
        "import sys\n"
        "from hubspoke.cli.main import main\n"
        f"assert main(['validate', {str(ROOT / 'config' / 'dev.yaml')!r}]) == 0\n"
        f"print('imported:', [m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "imported: []"


def test_top_level_help_lists_every_command_without_importing_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name, command in COMMANDS.items():
        assert name in out and command.summary in " ".join(out.split()), name


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_module_registers_the_summary_listed_for_it(name: str) -> None:
    parser = build_parser([name])
    [sub] = [a for a in parser._actions if a.dest == "command"]
    help_of = {c.dest: c.help for c in sub._choices_actions}  # type: ignore[attr-defined]
    assert help_of[name] == COMMANDS[name].summary
    assert sub.choices[name]._actions, "the module's own parser is loaded, not the bare listing"
    for other in set(COMMANDS) - {name}:
        assert not sub.choices[other]._actions, f"{other} is listed, not loaded"


def test_aws_calls_make_three_attempts_as_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/cli.md: "3 attempts". botocore's Config: max_attempts is the number of retries after the initial
    request, total_max_attempts the number of attempts including it. A server that answers every request 500
    (retryable in botocore's standard mode) must see exactly 3 requests."""
    import http.server

    from botocore.exceptions import ClientError

    from hubspoke.cli.checks import session_clients
    from tests.cli.preflight_world import isolate_from_real_aws

    seen: list[str] = []

    class Failing(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append(self.path)
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    endpoint = serve_in_background(server, "http")
    try:
        isolate_from_real_aws(monkeypatch)
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        with pytest.raises(ClientError):
            session_clients()("sts", "us-east-1").get_caller_identity()
    finally:
        shut(server)
    assert len(seen) == 3
