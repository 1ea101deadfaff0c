# NetGauge: `make sweep` runs the default grid, `make test` runs the tests.
# Both install what is missing first (scripts/setup.sh: apt + pip, idempotent).

SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
GRID  ?= default
# Snakemake job slots: twice the CPUs. Lab jobs (routing, netllmbench, k8s) mostly wait on
# their networks (with one job per CPU the CPUs sat 39 % idle over `make sweep`); the
# model job asks for every slot, so it still runs alone and binds the engine to every CPU.
CORES ?= $(shell echo $$(( 2 * $$(nproc) )))
DATA  ?= data

.PHONY: help setup sweep smoke report test test-fast lint bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

setup:  ## install Debian and Python packages (idempotent)
	@scripts/setup.sh

sweep: setup  ## run grid $(GRID) (default: default) and print the summary
	$(VENV)/bin/snakemake --cores $(CORES) sweep --config grid=$(GRID) data_dir=$(DATA)
	@echo "results: $(DATA)/results/   summary: $(DATA)/summaries/$(GRID).md   report: $(DATA)/report/index.html"

smoke: GRID = smoke
smoke: sweep  ## run the small smoke grid

report: setup  ## write the report page for grid $(GRID) (data/report/index.html)
	$(VENV)/bin/snakemake --cores $(CORES) report --config grid=$(GRID) data_dir=$(DATA)

test: setup  ## run the whole test suite
	$(VENV)/bin/pytest

test-fast: setup  ## the quick suite while developing: no emulators, no root, no Snakemake
	$(VENV)/bin/pytest -m "not integration"

lint: setup  ## ruff check and format check, the import contracts, mypy on the app API
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

bench: setup  ## speed benchmarks; writes $(DATA)/bench/*.json
	$(PY) -m pipeline.bench --data-dir $(DATA)

clean:  ## remove results, work files, caches and logs (not the venv)
	rm -rf $(DATA)/results $(DATA)/work $(DATA)/summaries $(DATA)/plans $(DATA)/logs $(DATA)/cache $(DATA)/report $(DATA)/exports .snakemake
