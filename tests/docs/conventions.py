"""Rules for commands the docs show that no parser checks: placeholders, elisions, kubectl and date.

- Placeholders: the docs write a value the reader fills in as `<like-this>` (lowercase words joined by
  hyphens, docs/runbooks/README.md); any other `<...>`, an all-capitals metavariable (`PATH`, `REGION`) or an
  elision (`...`) in a command is something the reader would have to guess how to write.
- kubectl (not installed here; kubernetes/kubectl at v0.33.0, the client of Kubernetes 1.33,
  7237febc47085a42e2aeb8c5e280071dc3ff9e4b): `kubectl debug` defaults to the `legacy` profile
  (pkg/cmd/debug/debug.go, the `--profile` flag); for a node, only `sysadmin` makes the container privileged
  (pkg/cmd/debug/profiles.go, sysadminProfile.Apply -> setPrivileged), which `ip route replace` on the host
  needs (NET_ADMIN). A job rendered with `--kind hyperpod` is a HyperPodPyTorchJob, whose resource is
  `hyperpodpytorchjobs` (CRD hyperpodpytorchjobs.sagemaker.amazonaws.com, as aws/sagemaker-hyperpod-cli's
  training-operator check reads it), so a listing of training jobs must name both kinds.
- date: POSIX specifies only `date [-u] [+format]` (The Open Group Base Specifications, Issue 7, "date");
  `-d`/`--date` is GNU coreutils only, and macOS's BSD date rejects it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from tests.docs.shell import Command, Word

PLACEHOLDER = re.compile(r"<[a-z0-9]+(?:-[a-z0-9]+)*>")
_ANY_PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*>")
_METAVAR = re.compile(r"(?:^|(?<=[/=:,]))[A-Z][A-Z0-9_]*(?=$|[/=:,.])")


def placeholder_problems(text: str) -> list[str]:
    """Placeholders in `text` that are not written `<like-this>`."""
    return [
        f"placeholder {found} is not in the documented style <like-this> (lowercase words joined by hyphens)"
        for found in dict.fromkeys(_ANY_PLACEHOLDER.findall(text))
        if not PLACEHOLDER.fullmatch(found)
    ]


def guesswork_problems(
    words: list[Word], *, metavariables: bool, choices: Mapping[str, Collection[str]] | None = None
) -> list[str]:
    """Elisions anywhere in a tool's arguments, and (where asked) all-capitals metavariables among them.

    An all-capitals word the tool lists as a choice of its option (`--checksum-mode ENABLED`) is a value, not a
    metavariable: `choices` maps option spellings to their choices.
    """
    problems: list[str] = []
    previous = ""
    for word in words:
        option, previous = previous, word.text
        if word.dynamic:
            continue
        name, _, inline = word.text.partition("=")
        if inline and inline in (choices or {}).get(name, ()):
            continue
        if word.text in (choices or {}).get(option, ()):
            continue
        if "..." in word.text:
            problems.append(
                f"`{word.text}` elides part of the command: write it in full or use a <placeholder>"
            )
        elif metavariables:
            value = word.text.partition("=")[2] if word.text.startswith("-") else word.text
            for metavar in _METAVAR.findall(value):
                problems.append(
                    f"{metavar} looks like a placeholder: write it as <{metavar.lower().replace('_', '-')}>"
                )
    return problems


def kubectl_problems(command: Command) -> list[str]:
    argv = command.argv
    problems: list[str] = []
    if "debug" in argv and any(a.startswith("node/") for a in argv):
        profile = _option_value(argv, "--profile")
        if profile != "sysadmin":
            problems.append(
                "kubectl debug node/... runs with the `legacy` profile unless told otherwise (kubectl 1.33): the "
                "container is not privileged, so route changes on the host fail; add --profile=sysadmin"
            )
    if "get" in argv:
        after = argv[argv.index("get") + 1 :]
        resource = next((a for a in after if not a.startswith("-") and a not in _option_values(argv)), "")
        kinds = {r.split(".")[0] for r in resource.split(",")}
        if kinds & {"pytorchjob", "pytorchjobs"} and not kinds & {
            "hyperpodpytorchjob",
            "hyperpodpytorchjobs",
        }:
            problems.append(
                "lists PyTorchJobs but not HyperPodPyTorchJobs (`hubspoke render job --kind hyperpod`): "
                "add hyperpodpytorchjobs to the resource list"
            )
    return problems


def date_problems(command: Command) -> list[str]:
    for arg in command.argv[1:]:
        short = arg[1:] if arg.startswith("-") and not arg.startswith("--") else ""
        if arg == "--date" or arg.startswith("--date=") or "d" in short:
            return [
                "`date -d` is GNU-only (macOS/BSD date has no -d; POSIX date takes only -u and +format): use "
                "epoch seconds, e.g. $(( $(date +%s) - 7*86400 )), which the AWS CLI accepts as a timestamp"
            ]
        if "v" in short:
            return [
                "`date -v` is BSD-only (GNU date has no -v): use epoch seconds, e.g. $(( $(date +%s) - 3600 ))"
            ]
    return []


def _option_value(argv: list[str], option: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg.startswith(option + "="):
            return arg.split("=", 1)[1]
        if arg == option and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _option_values(argv: list[str]) -> set[str]:
    # kubectl's global flags that take a separate value (kubectl options).
    takes_value = {"-n", "--namespace", "-l", "--selector", "-o", "--output", "--context", "--kubeconfig"}
    return {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in takes_value}
