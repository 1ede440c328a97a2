# Every target creates .venv on first use, so `make run` / `make test` work on a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RESULTS ?= results
EXPERIMENT ?=
REPORT ?=

.PHONY: install run test test-all bench figures smoke clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

# The default experiment: MountainCar + RFIG, 1 seed, 1M env steps (about a minute on 2 CPU cores).
run: $(STAMP)
	$(PY) launch.py

# The default test suite (fast, CPU); `make test-all` adds the slow end-to-end checks.
test: $(STAMP)
	$(PY) -m pytest -m "not slow" -q

test-all: $(STAMP)
	$(PY) -m pytest -q

# Throughput and linear-algebra numbers quoted in the README.
bench: $(STAMP)
	$(PY) benchmarks/bench_reference_ppo.py
	$(PY) benchmarks/bench_throughput.py
	$(PY) benchmarks/bench_linalg.py

# Report (figures + tables + index.md) from whatever results exist.
figures: $(STAMP)
	$(PY) -m analysis --results $(RESULTS) $(if $(EXPERIMENT),--experiment $(EXPERIMENT)) $(if $(REPORT),--out $(REPORT))

# Two bonuses x two seeds on CartPole in about a minute, then the report.
smoke: $(STAMP)
	$(PY) launch.py -m sweep=smoke
	$(MAKE) figures EXPERIMENT=smoke

clean:
	rm -rf $(VENV) .pytest_cache
