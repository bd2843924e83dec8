"""A recording kubectl for `hubspoke dataset load` tests: runs as the `kubectl` executable on PATH.

Every call is appended to $KUBECTL_STUB_DIR/calls.jsonl (argv and stdin); the cluster is $KUBECTL_STUB_DIR/
state.json: {"jobs": {name: Job}, "configmaps": [names], "log": [lines], "outcome": [conditions],
"outcomes": [JobStatus], "unreachable": bool}. What it answers
follows kubectl's documented behaviour for the verbs used (kubectl reference): `get job N --ignore-not-found -o
json` prints nothing for a missing Job; `apply -f -` creates the Job read from stdin; `logs --follow job/N`
prints the pod's log, after which this stub gives the Job the scenario's `outcome` conditions; `delete job N`
removes it. An unreachable server fails every call with kubectl's connection error (exit 1).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    home = Path(os.environ["KUBECTL_STUB_DIR"])
    stdin = sys.stdin.read() if "-" in argv else None
    with (home / "calls.jsonl").open("a") as calls:
        calls.write(json.dumps({"argv": argv, "stdin": stdin}) + "\n")
    state = json.loads((home / "state.json").read_text())
    if state.get("unreachable"):
        print("The connection to the server localhost:8443 was refused - did you specify the right host or port?",
              file=sys.stderr)  # fmt: skip
        return 1
    jobs = state.setdefault("jobs", {})
    verb = argv[0]
    if verb == "get" and argv[1] == "configmap":
        if argv[2] in state.get("configmaps", []):
            print(f"configmap/{argv[2]}")
    elif verb == "get":
        name = argv[2]
        if name in jobs:
            print(json.dumps(jobs[name]))
    elif verb == "apply":
        import yaml  # here only: most calls read no manifest, and importing it is most of a call's start

        job = yaml.safe_load(stdin or "")
        job["status"] = {}
        jobs[job["metadata"]["name"]] = job
    elif verb == "logs":
        name = argv[2].removeprefix("job/")
        for line in state.get("log", []):
            print(line, flush=True)
        # The Job's status once this pod has ended: the next of `outcomes` (a JobStatus each), else `outcome`'s
        # conditions.
        outcomes = state.get("outcomes") or []
        jobs[name]["status"] = outcomes.pop(0) if outcomes else {"conditions": state.get("outcome", [])}
    elif verb == "delete":
        jobs.pop(argv[2], None)
    else:
        print(f"kubectl stub: unexpected {argv}", file=sys.stderr)
        return 2
    (home / "state.json").write_text(json.dumps(state))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
