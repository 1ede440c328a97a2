# Every target creates .venv on first use, so `make run` / `make test` work on a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RESULTS ?= results
EXPERIMENT ?=
REPORT ?=
ALLOW_INCOMPLETE ?=

.PHONY: install install-gpu gpu-wheels gpu-wheels-brax paper32-gpu bench-gpu run test test-extended test-all bench figures figures-paper smoke coverage repro repro-publish status estimate wandb-sync wheel-check clean

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

# Brax on such a box (jax 0.11, Python 3.12): the same brax, MuJoCo and MJX as the CPU runs, and the
# two pure-Python packages brax imports that the box lacks, as cp312 manylinux wheels in
# .gpu-wheels/brax/ (about 18 MB); installed without their version pins (campaign/scripts/paper32_gpu.sh).
gpu-wheels-brax: $(STAMP)
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
		-d .gpu-wheels/brax brax==0.14.2 mujoco-core==4.0.0 mujoco-mjx==3.17.0 trimesh==5.2.0 jaxopt==0.8.5

# The paper's 40 non-Brax cells at 32 seeds on a GPU box, stopped before the command's limit, the
# finished cells' data in OUT (docs/reproduction.md: the paper at its own 32 seeds). SWEEP=paper32_brax
# for the sparse Brax cells; COMMIT names the tree's commit where it has no .git.
OUT ?= gpu-out
paper32-gpu:
	PYTHON=$(if $(wildcard $(PY)),$(PY),python3) campaign/scripts/paper32_gpu.sh $(OUT)

# The GPU issue's numbers (precision, checkpoint cost, PureJaxRL comparison) in about 7 minutes.
bench-gpu:
	PYTHON=$(if $(wildcard $(PY)),$(PY),python3) benchmarks/gpu_check.sh

# The default experiment: MountainCar + RFIG, 1 seed, 1M env steps (about a minute on 2 CPU cores).
run: $(STAMP)
	$(PY) launch.py

# The default test suite (CPU): the linter and the type checker, then pytest, in about ten minutes on
# 2 cores; `make test-extended` runs the end-to-end checks marked `extended` (whole sweeps, kills and
# relaunches, the toy bonus and suite in a copy of the project: each repeats a contract a faster test
# here covers, at several times its cost), and `make test-all` adds the slow ones too. CI runs
# `make test`, then `make test-extended`. Each runs pytest in two passes. First every test not marked
# kept_apart, on one worker per core (pytest-xdist; TEST_WORKERS=N for N workers, 0 for one process): these write only
# under their own tmp_path and bind no fixed port, so any two may run side by side. Then the
# kept_apart ones (pyproject.toml's markers: the SLURM tests, and those that judge the timing or
# overlap of real processes) in one process, one after another, with nothing beside them (xdist's
# own grouping, --dist loadgroup, would still run them beside other tests, and under pytest 9.2 it
# does not group at all). The second pass runs even when the first fails; the target fails if
# either did.
# Each pass keeps its report in .test-reports/ (JUnit XML: every test's outcome, time and failure
# text), and prints the slowest tests, so a failure or a test near its timeout on a busy machine is
# on disk after the terminal is gone.
TEST_WORKERS ?= $(shell nproc)
TEST_REPORTS := .test-reports
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not slow and not extended and not kept_apart" --durations=10 \
		--junitxml=$(TEST_REPORTS)/parallel.xml; first=$$?; \
	$(PY) -m pytest -q -m "not slow and not extended and kept_apart" --durations=5 \
		--junitxml=$(TEST_REPORTS)/kept_apart.xml && exit $$first

test-extended: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "extended and not slow and not kept_apart" --durations=10 \
		--junitxml=$(TEST_REPORTS)/extended.xml; first=$$?; \
	$(PY) -m pytest -q -m "extended and not slow and kept_apart" --durations=5 \
		--junitxml=$(TEST_REPORTS)/extended_kept_apart.xml && exit $$first

test-all: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not kept_apart"; first=$$?; \
	$(PY) -m pytest -q -m kept_apart && exit $$first

# Throughput, bonus-cost and linear-algebra numbers quoted in docs/speed.md.
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
	$(PY) benchmarks/dqn_throughput.py --bonuses none,rnd,rfig --rfig-floor

# Reports (figures + tables + index.md) of your experiments under $(RESULTS): with no EXPERIMENT, of
# each experiment there that holds runs, one after another, each into reports/<experiment>/;
# EXPERIMENT=NAME: of that one (REPORT=DIR: into DIR instead). Exits 4 when a report lists problems
# (missing or incomplete runs), after building them all, unless ALLOW_INCOMPLETE=1; exits 1, saying
# how to make runs, when there are none.
figures: $(STAMP)
	$(PY) -m analysis --caller make --results $(RESULTS) $(if $(EXPERIMENT),--experiment $(EXPERIMENT)) \
		$(if $(REPORT),--out $(REPORT)) $(if $(ALLOW_INCOMPLETE),--allow-incomplete)

# The published reports, rebuilt from their committed data (and the README's summaries between their
# markers): the reproduction (docs/results/repro/), the 32-seed grid (docs/results/paper32/, once it
# has data) and the grid as its authors ran it (docs/results/paper32_as_run/, once it has data). About
# ten minutes; `make figures` never runs them.
figures-paper: $(STAMP)
	@if [ -f docs/results/repro/data/runs.json.gz ]; then \
		echo "$(PY) -m campaign.repro build --readme README.md"; \
		$(PY) -m campaign.repro build --readme README.md || exit $$?; fi
	@if [ -f docs/results/paper32/data/runs.json.gz ]; then \
		echo "$(PY) -m campaign.repro build --experiment paper32 ... --readme README.md"; \
		$(PY) -m campaign.repro build --experiment paper32 --data docs/results/paper32/data \
			--out docs/results/paper32 --readme README.md || exit $$?; fi
	@if [ -f docs/results/paper32_as_run/data/runs.json.gz ]; then \
		echo "$(PY) -m campaign.repro build --experiment paper32_as_run ..."; \
		$(PY) -m campaign.repro build --experiment paper32_as_run --data docs/results/paper32_as_run/data \
			--out docs/results/paper32_as_run || exit $$?; fi

# All five bonuses x two seeds on CartPole in a few minutes, then the report.
smoke: $(STAMP)
	$(PY) launch.py -m sweep=smoke
	$(MAKE) figures EXPERIMENT=smoke

# Reward-free exploration on MountainCar, 5 bonuses x 4 seeds x 1M steps, then the report.
coverage: $(STAMP)
	$(PY) launch.py -m sweep=coverage
	$(MAKE) figures EXPERIMENT=coverage

# The reproduction (docs/results/repro/): every stage of campaign/scripts/repro.sh on two lanes of one core
# each, or STAGES="core brax ..." in one lane. Stop it at any point and run it again: complete
# seeds are skipped, partial ones resume. Then `make repro-publish` exports the data and rebuilds
# the report.
STAGES ?=
repro: $(STAMP)
	RESULTS=$(RESULTS) PY=$(PY) campaign/scripts/repro.sh $(STAGES)

repro-publish: $(STAMP)
	$(PY) -m campaign.repro export --results $(RESULTS) --complete-cells
	$(PY) -m campaign.repro build --readme README.md

# Per env x bonus x variant: complete, partial and missing seeds of an experiment.
status: $(STAMP)
	$(PY) -m rfig_exp.results.status --results $(RESULTS) $(if $(EXPERIMENT),--experiment $(EXPERIMENT))

# Upload the offline wandb runs of EXPERIMENT (default: every experiment) with `wandb sync`, skipping
# those wandb marked uploaded and seeds still training; DRY_RUN=1 lists them and the command.
# WANDB_SYNC replaces the uploader (it gets the run folders as its last arguments).
WANDB_SYNC ?=
DRY_RUN ?=
wandb-sync: $(STAMP)
	$(PY) -m rfig_exp.results.wandb_sync --results $(RESULTS) $(if $(EXPERIMENT),--experiment $(EXPERIMENT)) \
		$(if $(WANDB_SYNC),--command "$(WANDB_SYNC)") $(if $(DRY_RUN),--dry-run)

# Compute the paper's grid needs, from the runs measured so far; or, with SWEEP=NAME, what a sweep
# preset will cost before it runs, and with LINE="env=... bonus=rfig,rnd 'seed=range(32)'" what one's
# own launch.py -m command line will (DEVICE=cpu|h100, SLOTS = jobs at once: cores, GPUs or nodes):
# the totals and one line per env; JOBS=1 adds one line per job with the source of its speed.
SWEEP ?=
LINE ?=
DEVICE ?= cpu
SLOTS ?= 1
estimate: $(STAMP)
	$(PY) -m campaign.estimate --results $(RESULTS) $(if $(EXPERIMENT),--experiment $(EXPERIMENT)) \
		$(if $(SWEEP),--sweep $(SWEEP)) $(if $(or $(SWEEP),$(LINE)),--device $(DEVICE) --slots $(SLOTS)) \
		$(if $(CALIBRATE),--calibrate) $(if $(JOBS),--jobs) $(if $(LINE),-- $(LINE))

# The package as a user of its bonuses installs it (docs/library.md): a wheel of this tree in a fresh
# virtual environment runs examples/ppo_bonus.py from outside the checkout, and launch.py still finds
# conf/. A few minutes: it installs jax, flax, brax & co. into that environment.
wheel-check:
	PYTHON=$(PYTHON) scripts/wheel_check.sh

clean:
	rm -rf $(VENV) .pytest_cache $(TEST_REPORTS)
