# The two commands the README starts with: `make demo` and `make test`.
PY := .venv/bin/python
OUT ?= out

.PHONY: setup setup-full demo lint test test-quick test-latest lock bench clean

setup:
	@scripts/setup.sh

setup-full:
	@scripts/setup.sh --full

## Plan the shipped IoT example on the 1 server + 3 Raspberry Pi inventory, with the baselines compared; setup brings
## Graphviz for the pictures (as root; else it says how).
demo: setup
	.venv/bin/placement plan --inventory inventory/edge-lab.yaml --profile examples/profiles/iot-sensors.json \
	  --out $(OUT)/iot-sensors --compare

## The static checks, before any test runs: lint, the formatting and the types (config in pyproject.toml).
LINT = .venv/bin/ruff check && .venv/bin/ruff format --check && .venv/bin/mypy

lint: setup
	$(LINT)

## Everything, with real Flink, PySpark, sshd, tc and Ansible (needs root for namespaces; CI runs this).
## Two pytest-xdist workers: the suite mostly waits on clusters; tests that share machine-wide names (the lab, fixed
## namespaces) run as one group in one worker (tests/conftest.py: pytest_xdist_make_scheduler). Three were tried: the
## machine's two cores at ~90 % and a lab JobManager's actor system timed out at start.
PYTEST_ARGS := -q -p no:cacheprovider -n 2 --timeout=900 --durations=30

test: setup-full
	$(LINT)
	.venv/bin/pytest $(PYTEST_ARGS)

## The static checks and the fast part of the suite: no Flink cluster, no Spark, no Ansible, no wheel build.
test-quick: setup
	$(LINT)
	.venv/bin/pytest -q -p no:cacheprovider -n 2 -m "not flink and not spark and not ansible and not packaging"

## The suite against the newest versions pyproject.toml's ranges allow (in .venv-latest; .venv keeps the tested ones):
## the next upstream release shows up here as a failing check before it reaches anyone's fresh machine.
test-latest:
	@scripts/setup.sh --full --latest
	.venv-latest/bin/pytest $(PYTEST_ARGS)

## The suite with two CPU spinners beside it (scripts/with-load.sh; LOAD_NICE=0 for spinners that compete as other
## work does): a check that holds only on a quiet machine fails here. The spinners stop however pytest ends.
.PHONY: test-loaded
test-loaded: setup-full
	@scripts/with-load.sh .venv/bin/pytest $(PYTEST_ARGS)

## Record the newest versions the ranges allow as the tested ones (run `make test-latest` first and commit on green).
lock:
	@scripts/setup.sh --full --latest
	@{ sed -n '/^#/p' constraints.txt; .venv-latest/bin/pip freeze --exclude-editable; \
	   .venv-latest/bin/pip list --format=freeze 2>/dev/null | grep '^setuptools=='; } > constraints.txt.new
	@mv constraints.txt.new constraints.txt
	@git --no-pager diff --stat constraints.txt || true

bench: setup-full
	$(PY) benchmarks/cli_startup.py
	$(PY) benchmarks/solver_scaling.py
	$(PY) benchmarks/profile_throughput.py --sizes 10M,50M
	$(PY) benchmarks/redeploy_downtime.py
	$(PY) benchmarks/delayline_cpu.py
	$(PY) benchmarks/lab_placements.py --job all

clean:
	rm -rf $(OUT) .pytest_cache
