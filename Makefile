# urbandp: `make demo` and `make test` work on a fresh clone (they create .venv themselves).
# make test runs the suite on one pytest-xdist worker per core, a test file per worker (its module fixtures once).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test venv bench clean wheel-smoke docs

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m urbandp._demo out/demo

test: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest -q -n auto --dist loadfile

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/run_all.py

docs: $(STAMP)  ## the docs site in out/site: API reference from the docstrings, docs/tutorial.ipynb executed
	$(PY) -m pip install --quiet -e '.[docs]'
	$(VENV)/bin/mkdocs build --strict

wheel-smoke:  ## the built wheel, installed with no extras in a fresh venv, runs the demo and README recipes
	bash .ci/wheel_smoke.sh out/wheel-smoke

clean:
	rm -rf out .pytest_cache
