# Everything a newcomer needs, with only Python >= 3.10 installed (README.md):
#   make train   set up what is missing, then train the default CNN on digits (ARGS="..." adds overrides)
#   make test    set up what is missing, then run the quick tests
#   make test-all  the whole suite, slow tests included (README's test command)
#   make setup   only the set-up: .venv/ with PyTorch and the package
#   make test-oldest  the quick tests in .venv-oldest/, with the oldest releases pyproject.toml allows
#                (PYTHON=python3.10 OLDEST=.venv-oldest-3.10: on the oldest Python it allows)
#   make test-next   the quick tests in .venv-next/, with the newest pre-releases of Hydra,
#                OmegaConf and the submitit launcher and the newest releases of the other engines
#   make docs    the documentation site, into docs/site/

PYTHON ?= python3
VENV ?= .venv
# The PyTorch build. Any torch>=2.8 works (pyproject.toml); this pair is the one the tests run
# with. For a CPU-only build on Linux add `--index-url https://download.pytorch.org/whl/cpu`,
# for a given CUDA that CUDA's index (https://pytorch.org/get-started/locally/); PyPI's macOS
# wheels use the CPU and Apple's GPU.
TORCH ?= torch==2.14.1 torchvision==0.29.1
ARGS ?=

BIN := $(VENV)/bin
READY := $(VENV)/.ready

.PHONY: setup train test test-all test-oldest test-next docs

$(READY): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e ".[all,dev]"
	touch $@

setup: $(READY)

train: $(READY)
	$(BIN)/research-train $(ARGS)

# The quick tests run in two worker processes (pytest-xdist); the slow ones (signals, DDP,
# SLURM, whole searches and ablations) one at a time, as they time processes against each other.
test: $(READY)
	$(BIN)/python -m pytest -m "not slow" -n 2 -q

test-all: test
	$(BIN)/python -m pytest -m slow -q

# uv resolves every requirement in pyproject.toml, extras included, to the oldest release it
# allows (what those need in turn comes newest), so each floor declared there is one tested.
OLDEST := .venv-oldest
test-oldest:
	$(PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip uv
	$(OLDEST)/bin/uv pip compile --quiet pyproject.toml --extra all --extra dev \
		--resolution lowest-direct --python $(OLDEST)/bin/python -o $(OLDEST)/oldest.txt
	$(OLDEST)/bin/python -m pip install --quiet -r $(OLDEST)/oldest.txt
	$(OLDEST)/bin/python -m pip install --quiet --no-deps -e .
	touch $(OLDEST)/.ready
	$(MAKE) test VENV=$(OLDEST)

# The engines' next releases: Hydra's and OmegaConf's newest pre-releases (pip's --pre), and the
# newest releases of Lightning, W&B, Optuna and transformers, over the same torch as `make test`.
NEXT := .venv-next
NEXT_PRE := hydra-core omegaconf hydra-submitit-launcher
NEXT_NEWEST := lightning wandb optuna optuna-integration transformers
test-next:
	$(PYTHON) -m venv $(NEXT)
	$(NEXT)/bin/python -m pip install --quiet --upgrade pip
	$(NEXT)/bin/python -m pip install --quiet $(TORCH)
	$(NEXT)/bin/python -m pip install --quiet -e ".[all,dev]"
	$(NEXT)/bin/python -m pip install --quiet --upgrade --pre $(NEXT_PRE)
	$(NEXT)/bin/python -m pip install --quiet --upgrade $(NEXT_NEWEST)
	touch $(NEXT)/.ready
	$(NEXT)/bin/python -m pip list 2>/dev/null | grep -iE '^(hydra|omegaconf|lightning|wandb|optuna|transformers)'
	$(MAKE) test VENV=$(NEXT)

docs: $(READY)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -f docs/mkdocs.yml
