# Two commands do all set-up on a fresh machine with Python 3.11+, Node and make:
#   make synth   venv + pinned packages + pinned CDK CLI and Node 22, then synth every config/ and check policy
#   make test    lint, types and the fast test tier (under 2 minutes on an idle 2-core machine, nearer 3 on a
#                busy one: benchmarks/lab-notes.md); make test-thorough runs every test
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# jsii spawns `node` from PATH: put the pinned Node 22 (npm package "node") first, so synth never runs on Node 20.
export PATH := $(CURDIR)/node_modules/.bin:$(CURDIR)/$(VENV)/bin:$(PATH)
CONFIGS := $(wildcard config/*.yaml)
# checkov lives in its own venv: its pins conflict with the project's (tools/checkov-requirements.txt).
CHECKOV := .tools/checkov/bin/checkov

.PHONY: setup synth lint-templates test test-fast test-thorough mutation lint typecheck docs benchmark clean

setup: $(VENV)/.installed node_modules/.installed .tools/checkov/.installed

$(VENV)/.installed: pyproject.toml tools/upstream-test-requirements.txt
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "hubspoke needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	# Without their dependencies: the file says why.
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -r tools/upstream-test-requirements.txt
	touch $@

.tools/checkov/.installed: tools/checkov-requirements.txt
	$(PYTHON) -m venv .tools/checkov
	.tools/checkov/bin/python -m pip install --quiet --disable-pip-version-check -r tools/checkov-requirements.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	node --version | grep -q '^v2[2-9]\.' || { echo "node_modules/.bin/node is not Node 22+"; exit 1; }
	touch $@

# Validation first (same messages as `hubspoke validate`), then one synth of every environment;
# cdk-nag, Control Tower controls and our pack run inside synth and fail it on any unacknowledged finding.
synth: setup
	hubspoke validate $(CONFIGS)
	rm -rf cdk.out
	cdk synth --quiet
	$(MAKE) --no-print-directory lint-templates

# cfn-lint: no error and no warning but those .cfnlintrc.yaml ignores with its reason. checkov (what security
# teams run): every failed check fails; accepted ones carry a reason in the template (hubspoke/policy/acks.py).
lint-templates:
	cfn-lint --config-file .cfnlintrc.yaml --non-zero-exit-code warning -- $$(find cdk.out -name '*.template.json' | sort)
	@echo "cfn-lint: $$(find cdk.out -name '*.template.json' | wc -l) templates, no errors, no warnings"
	$(CHECKOV) --directory cdk.out --framework cloudformation --skip-download --quiet --compact

lint:
	ruff check .
	ruff format --check .
	lint-imports --no-cache

typecheck:
	mypy

# docs/configuration.md's key table, rendered from the schema's field descriptions (hubspoke/config/reference.py),
# and docs/cli.md's reference, from each command's --help (hubspoke/cli/reference.py); tests/test_readme.py and
# tests/cli/test_reference.py fail when a committed file differs. docs/policy.md's accepted findings, from the
# acknowledgments dev.yaml and its variants make (tools/accepted_findings.py; tests/tools/test_accepted_findings.py).
docs: $(VENV)/.installed node_modules/.installed
	$(PY) -m hubspoke.config.reference
	$(PY) -m hubspoke.cli.reference
	$(PY) tools/accepted_findings.py

# Two test tiers (docs/development.md, "Tests"). `make test`: ruff, mypy and the fast tier, a test for every shipped behaviour,
# on two pytest-xdist workers (PYTEST_WORKERS=0 runs in one process). `make test-thorough`: everything there is,
# the fast tier included: server twins of the fakes, every topology shape, hundreds of drawn topologies
# (Hypothesis' `thorough` profile, tests/conftest.py), sandboxed and subprocess runs, external linters, every
# benchmark in a quick mode (tests/tools/test_benchmarks.py), and the mutation gate on a fixed sample of the
# modules in tools/mutation.py's THOROUGH_SAMPLES (tests/tools/test_mutation_gate.py).
# mypy runs beside the tests (cold, about 10 s on one core: pyproject.toml has it read only the aws_cdk modules
# hubspoke imports); its cache lives in the user's cache, so another checkout of the same pins reuses it (mypy
# revalidates entries by content hash).
PYTEST_WORKERS ?= 2
export MYPY_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/hubspoke/mypy
test: setup lint
	@$(MAKE) --no-print-directory -j2 --output-sync=target typecheck test-fast

# --dist loadfile: each test file runs in one worker, so a module's fixtures (a deployed fake world, a synth to
# a directory) are built once, not once in each worker that gets some of its tests. --no-loadscope-reorder: files
# go out in tests/conftest.py's order (long ones first), so both workers finish together. The thorough tier hands
# out single tests (xdist's default --dist load) in that same order; its balance is not measured.
test-fast: setup
	pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not thorough"

test-thorough: setup
	HYPOTHESIS_PROFILE=thorough pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --hypothesis-show-statistics

# mutmut over each module against its own tests (tools/mutation.py): the score per module and file, reviewed
# equivalent mutants subtracted (tools/mutation_equivalents.txt); fails if a module scores below its gate (90 %,
# or a lower published floor: tools/mutation.py). Slow (tens of minutes), so weekly in
# .github/workflows/mutation.yml; `make test-thorough` runs a fixed sample of some modules. MUTATION_MODULES picks some,
# MUTATION_ARGS adds options (--show prints every undetected mutant's diff; --sample N --seed S runs a reproducible
# random N mutants per module, with a 95 % interval). How: docs/development.md; every score: benchmarks/mutation.md.
MUTATION_MODULES ?=
MUTATION_CHILDREN ?= 1
mutation: setup
	nice -n 19 $(PY) tools/mutation.py --max-children $(MUTATION_CHILDREN) $(MUTATION_ARGS) $(MUTATION_MODULES)

benchmark: setup
	$(PY) benchmarks/synth_scaling.py
	$(PY) benchmarks/train_memory.py
	$(PY) benchmarks/prewarm_path.py

clean:
	rm -rf cdk.out .cache .pytest_cache .mypy_cache .ruff_cache
