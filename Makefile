# The two commands of the README. Each sets up .venv on first use (idempotent), then runs.
MAIN_EXTRAS ?= torch,review,llm
TEST_EXTRAS ?= torch,review,llm,dask,dev
VENV ?= .venv

.PHONY: reproduce test lint docs docs-records
reproduce:  ## set up, then run every headline experiment at quick scale -> results/report.html
	ICML25_VENV=$(VENV) scripts/setup-env.sh $(MAIN_EXTRAS)
	$(VENV)/bin/icml25 reproduce --quick

TEST_JOBS ?= auto

test:  ## set up with the test extras, then run the default (fast) test suite on every core
	ICML25_VENV=$(VENV) scripts/setup-env.sh $(TEST_EXTRAS)
	$(VENV)/bin/python -m pytest -n $(TEST_JOBS)

lint:
	ICML25_VENV=$(VENV) scripts/setup-env.sh $(TEST_EXTRAS)
	$(VENV)/bin/ruff check src tests benchmarks

docs:  ## build the documentation site into site/ (warnings are errors)
	ICML25_VENV=$(VENV) scripts/setup-env.sh $(TEST_EXTRAS)
	NO_MKDOCS_2_WARNING=1 PYTHONPATH=$(CURDIR)/src $(VENV)/bin/mkdocs build --strict

docs-records:  ## rerun the quick reproductions and refresh the records the site's tables read
	ICML25_VENV=$(VENV) scripts/setup-env.sh $(MAIN_EXTRAS)
	$(VENV)/bin/icml25 reproduce --quick --out results
	$(VENV)/bin/python scripts/docs_records.py results docs/reproduce
