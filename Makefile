# dro_lab — the two set-up commands are `make course` and `make test`.
# Both create .venv from requirements/constraints.txt (the pinned, tested set) on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.dro-lab-installed
JOBS   ?= 2
PRESET ?= smoke
OUT    ?= build/course
PYTEST_ARGS ?=
# pytest-xdist workers of `make test` / `make test-fast`; the lessons run once per session on one of them
TEST_JOBS ?= 2
# the library's unit tests: nothing that starts a kernel, a browser, torchrun or a fresh environment
FAST   := not notebook and not browser and not freshenv and not ddp and not slow and not cuda

.PHONY: env course test test-fast test-env lint lab bench reference clean help

help:
	@echo "make course  - set up .venv, run every lesson (preset $(PRESET)) into $(OUT)/ and build the website $(OUT)/site/ (dro-course run)"
	@echo "make test    - set up .venv, run the test suite (every lesson once); about 10 min on 2 cores"
	@echo "make test-fast - the library's unit tests only (no notebooks, browser, DDP): about 1 min"
	@echo "make test-env  - the fresh-environment tests: Binder's environment built as repo2docker would, every lesson under nbval;"
	@echo "                 the sdist and wheel built from a copy of the clone, installed with the course extra in a fresh venv elsewhere"
	@echo "make lint    - ruff (lint and format check) and the import layers (import-linter)"
	@echo "make lab     - JupyterLab on the notebooks"
	@echo "make bench   - speed measurements (dro-lab bench)"
	@echo "make reference - re-run the five shipped reference runs into the package (about 4 h on 2 idle cores; resumes; from a clean commit)"

$(STAMP): pyproject.toml setup.py requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade --quiet pip
	$(BIN)/python -m pip install --constraint requirements/constraints.txt --editable ".[all]"
	# torchattacks (the peer-library check and AutoAttack-style evaluation) pins requests~=2.25 that it never
	# imports and that JupyterLab's stack cannot share: installed without its declared dependencies
	$(BIN)/python -m pip install --no-deps --constraint requirements/constraints.txt torchattacks
	# byte-compile what was installed: where PYTHONDONTWRITEBYTECODE is set, pip writes no .pyc and every kernel
	# and test process would recompile torch (measured: `import torch, torch._dynamo` 12 s -> 5 s on 2 cores)
	$(BIN)/python -m compileall -q -j 0 $$($(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") > /dev/null || true
	touch $(STAMP)

env: $(STAMP)

course: env
	$(BIN)/dro-course run --preset $(PRESET) --jobs $(JOBS) --out $(OUT)

# The lessons run once, first, on every core (--force: this run's code, nothing reused); the suite reads that run
# (tests/conftest.py, executed_course). A lesson that fails there is reported by tests/course/test_lessons.py.
test: env
	-$(BIN)/dro-course run --preset smoke --jobs $(TEST_JOBS) --force --instructor --out build/test-course
	DRO_LAB_TEST_COURSE=build/test-course DRO_LAB_PRESET=smoke PLOTLY_RENDERER=notebook \
		$(BIN)/python -m pytest -n $(TEST_JOBS) -m "not freshenv" $(PYTEST_ARGS)

test-fast: env
	DRO_LAB_PRESET=smoke $(BIN)/python -m pytest -n $(TEST_JOBS) -m "$(FAST)" $(PYTEST_ARGS)

test-env: env
	$(BIN)/python -m pytest -m freshenv $(PYTEST_ARGS)

lint: env
	$(BIN)/ruff check dro_lab course tests setup.py
	$(BIN)/ruff format --check dro_lab course tests setup.py
	$(BIN)/lint-imports

lab: env
	$(BIN)/jupyter lab notebooks

bench: env
	$(BIN)/dro-lab bench

# The reference runs shipped in dro_lab/experiments/reference_results/: each command resumes under build/reference.
reference: env
	$(BIN)/dro-lab reference all --regenerate --ship --runs build/reference

clean:
	rm -rf build .pytest_cache
