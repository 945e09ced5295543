# Two entry points on a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast install-gpu bench clean

$(STAMP): setup.py pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,tpu]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m crosstask.demo

test: $(STAMP)
	$(PY) -m pytest -n 2 --durations=15 tests

# The inner loop: everything but the end-to-end tests marked `slow`.
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -m "not slow" -q tests

# NVIDIA GPUs (driver >= 580): jax's CUDA 13 build into the same .venv (`.[gpu-cuda12]`
# by hand for older drivers). Never a prerequisite of `test`: CI has no GPU.
install-gpu: $(STAMP)
	$(PY) -m pip install -q -e '.[test,gpu]'

# All benchmarks (~40 min on 2 cores; BENCH_ARGS=--quick for a smoke run), then the
# table in benchmarks/README.md.
# CROSSTASK_OFFICIAL_SCORERS=DIR (the official LOT and CMRC scripts, not shipped) adds
# the scorer rows; without it they read 'not run'.
bench: $(STAMP)
	$(PY) benchmarks/run_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) demo_output
