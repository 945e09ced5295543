# Two entry points on a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): setup.py pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m crosstask.demo

test: $(STAMP)
	$(PY) -m pytest -n 2 --durations=15 tests

bench: $(STAMP)
	$(PY) benchmarks/step_and_decode.py

clean:
	rm -rf $(VENV) demo_output
