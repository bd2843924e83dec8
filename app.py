"""CDK entry point: `npx cdk synth` builds every config/*.yaml; `-c config=PATH` builds one."""

import os
import sys

from hubspoke.process import collect_less_often, exit_without_teardown

# One synth allocates millions of objects that live until exit (aws-cdk-lib's bindings): fewer collections,
# set before the imports below, which allocate most of them.
collect_less_often()

from hubspoke.config import ConfigError, format_problem, load_environments  # noqa: E402 (after the GC setting)
from hubspoke.stage import HubSpokeStage, new_app, selection_hint, synth_or_exit  # noqa: E402
from hubspoke.topology import stage_id  # noqa: E402

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
# Run by the CDK CLI (which sets CDK_CLI_VERSION for the app): say how to select the stacks, since --all cannot.
if os.environ.get("CDK_CLI_VERSION") and environments:
    print(selection_hint([stage_id(loaded.config) for loaded in environments]), file=sys.stderr)
exit_without_teardown()
