# The two commands of the README. Each sets up .venv on first use (idempotent), then runs.
MAIN_EXTRAS ?= torch,review,llm
TEST_EXTRAS ?= torch,review,llm,dask,dev
VENV ?= .venv

.PHONY: reproduce test lint
reproduce:  ## set up, then run every headline experiment at quick scale -> results/report.html
	ICML25_VENV=$(VENV) scripts/setup-env.sh $(MAIN_EXTRAS)
	$(VENV)/bin/icml25 reproduce --quick

test:  ## set up with the test extras, then run the default (fast) test suite
	ICML25_VENV=$(VENV) scripts/setup-env.sh $(TEST_EXTRAS)
	$(VENV)/bin/python -m pytest

lint:
	ICML25_VENV=$(VENV) scripts/setup-env.sh $(TEST_EXTRAS)
	$(VENV)/bin/ruff check src tests benchmarks
