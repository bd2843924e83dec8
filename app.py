"""CDK entry point: `npx cdk synth` builds every config/*.yaml; `-c config=PATH` builds one."""

import gc
import os
import sys

# One synth allocates millions of objects that live until exit (aws-cdk-lib's bindings): fewer collections,
# as mypy does for its own runs (mypy/build.py, gc.set_threshold(200 * 1000, 30, 30)); about 0.1 to 0.2 s of
# a synth (benchmarks/synth_scaling.py). Before the imports below, which allocate most of them.
gc.set_threshold(200_000, 30, 30)

from hubspoke.config import ConfigError, format_problem, load_environments  # noqa: E402 (after the GC setting)
from hubspoke.process import exit_without_teardown  # noqa: E402
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
