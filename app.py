"""CDK entry point: `npx cdk synth` builds every config/*.yaml; `-c config=PATH` builds one."""

import sys

from hubspoke.config import ConfigError, format_problem, load_environments
from hubspoke.stage import HubSpokeStage, new_app, synth_or_exit

app = new_app()
try:
    environments = load_environments(app.node.try_get_context("config") or "config")
except ConfigError as exc:
    print(exc, file=sys.stderr)
    sys.exit(2)
for loaded in environments:
    for warning in loaded.warnings:
        print(format_problem(loaded.path, warning), file=sys.stderr)
    HubSpokeStage(app, config=loaded.config)
synth_or_exit(app)
