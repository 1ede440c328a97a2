# Every target creates .venv on first use, so `make run` / `make test` work on a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RESULTS ?= results
EXPERIMENT ?=
REPORT ?=
ALLOW_INCOMPLETE ?=

.PHONY: install install-gpu gpu-wheels bench-gpu run test test-all bench figures smoke coverage repro repro-publish status estimate clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

# The same environment with jax's CUDA wheels (CUDA=12 or 13): `make install-gpu`, then `make run`.
CUDA ?= 12
install-gpu: $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,cuda$(CUDA)]"
	$(PY) -c "import jax; print('jax', jax.__version__, 'devices:', jax.devices())"

# The project's pure-Python dependencies as wheels in .gpu-wheels/, for a GPU box that has CUDA
# JAX, flax and optax but no package index (benchmarks/gpu_check.sh installs them there).
gpu-wheels: $(STAMP)
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: -d .gpu-wheels gymnax==1.0.1 \
		gymnasium==1.3.0 farama-notifications==0.0.6 hydra-core==1.3.2 omegaconf==2.3.0 \
		hydra-submitit-launcher==1.2.0 submitit==1.5.4 cloudpickle six
	$(PY) -m pip wheel --quiet --no-deps -w .gpu-wheels antlr4-python3-runtime==4.9.3  # an sdist only

# The GPU issue's numbers (precision, checkpoint cost, PureJaxRL comparison) in about 7 minutes.
bench-gpu:
	PYTHON=$(if $(wildcard $(PY)),$(PY),python3) benchmarks/gpu_check.sh

# The default experiment: MountainCar + RFIG, 1 seed, 1M env steps (about a minute on 2 CPU cores).
run: $(STAMP)
	$(PY) launch.py

# The default test suite (CPU): the linter and the type checker, then pytest; `make test-all` adds the
# slow end-to-end checks.
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -m "not slow" -q

test-all: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -q

# Throughput, bonus-cost and linear-algebra numbers quoted in the README.
bench: $(STAMP)
	$(PY) benchmarks/bench_reference_ppo.py
	$(PY) benchmarks/bench_throughput.py
	$(PY) benchmarks/bench_throughput.py --envs pointmaze_medium --bonuses none
	$(PY) benchmarks/bench_bonuses.py
	$(PY) benchmarks/bench_rfig.py --seeds 1
	$(PY) benchmarks/bench_rfig.py --seeds 8 --inverses woodbury,exact --rounds 5 --agent-rounds 3
	$(PY) benchmarks/bench_linalg.py
	$(PY) benchmarks/bench_envs.py
	$(PY) benchmarks/bench_brax.py
	$(PY) benchmarks/bench_checkpoint.py

# Report (figures + tables + index.md) from whatever results exist; exits 4 when the report lists
# problems (missing or incomplete runs) unless ALLOW_INCOMPLETE=1.
# With no EXPERIMENT it first rebuilds the published reproduction (docs/results/repro/) from its
# committed data; then it reports on $(RESULTS) when that folder exists.
figures: $(STAMP)
	@if [ -z "$(EXPERIMENT)" ] && [ -f docs/results/repro/data/runs.json.gz ]; then \
		echo "$(PY) -m analysis.reproduction build --readme README.md"; \
		$(PY) -m analysis.reproduction build --readme README.md || exit $$?; fi
	@if [ -n "$(EXPERIMENT)" ] || [ -d "$(RESULTS)" ]; then \
		echo "$(PY) -m analysis --results $(RESULTS) ..."; \
		$(PY) -m analysis --results $(RESULTS) $(if $(EXPERIMENT),--experiment $(EXPERIMENT)) \
		$(if $(REPORT),--out $(REPORT)) $(if $(ALLOW_INCOMPLETE),--allow-incomplete); fi

# All five bonuses x two seeds on CartPole in a few minutes, then the report.
smoke: $(STAMP)
	$(PY) launch.py -m sweep=smoke
	$(MAKE) figures EXPERIMENT=smoke

# Reward-free exploration on MountainCar, 5 bonuses x 4 seeds x 1M steps, then the report.
coverage: $(STAMP)
	$(PY) launch.py -m sweep=coverage
	$(MAKE) figures EXPERIMENT=coverage

# The reproduction (docs/results/repro/): every stage of scripts/repro.sh on two lanes of one core
# each, or STAGES="core brax ..." in one lane. Stop it at any point and run it again: complete
# seeds are skipped, partial ones resume. Then `make repro-publish` exports the data and rebuilds
# the report.
STAGES ?=
repro: $(STAMP)
	RESULTS=$(RESULTS) PY=$(PY) scripts/repro.sh $(STAGES)

repro-publish: $(STAMP)
	$(PY) -m analysis.reproduction export --results $(RESULTS)
	$(PY) -m analysis.reproduction build --readme README.md

# Per env x bonus x variant: complete, partial and missing seeds of an experiment.
status: $(STAMP)
	$(PY) -m rfig_exp.status --results $(RESULTS) $(if $(EXPERIMENT),--experiment $(EXPERIMENT))

# Compute the paper's grid needs, from the runs measured so far; or, with SWEEP=NAME, what a sweep
# preset will cost before it runs (DEVICE=cpu|h100, SLOTS = jobs at once: cores, GPUs or nodes): the totals
# and one line per env; JOBS=1 adds one line per job with the source of its speed.
SWEEP ?=
DEVICE ?= cpu
SLOTS ?= 1
estimate: $(STAMP)
	$(PY) -m rfig_exp.estimate --results $(RESULTS) $(if $(EXPERIMENT),--experiment $(EXPERIMENT)) \
		$(if $(SWEEP),--sweep $(SWEEP) --device $(DEVICE) --slots $(SLOTS)) $(if $(CALIBRATE),--calibrate) \
		$(if $(JOBS),--jobs)

clean:
	rm -rf $(VENV) .pytest_cache
