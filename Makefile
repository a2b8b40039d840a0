# The README's two commands: `make reproduce` (the main job) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
OUT    ?= results

.PHONY: install lint test test-fast reproduce fuzz bench docs dist check-ranges clean

install: $(STAMP)

# One virtual environment with every extra, at the exact versions of constraints.txt (pyproject.toml
# declares the supported ranges); torch is pinned (CPU build) by the `sentence` extra.
# bfcl-eval is installed without its dependencies: the replay reads its data files and runs its
# simulated APIs, which need only the standard library and mpmath (the benchmark's real sessions).
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade -c constraints.txt pip
	$(PY) -m pip install -c constraints.txt -e ".[dev,bench,sentence,tokens,langchain,postgres,openai-agents]"
	$(PY) -m pip install -c constraints.txt --no-deps bfcl-eval  # BFCL's data and simulated APIs only (stdlib + mpmath)
	touch $(STAMP)

# ruff (lint and format check) and mypy, configured in pyproject.toml; `make test` runs it first.
LINTED := src tests tools asv_bench examples
lint: $(STAMP)
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)
	$(PY) -m mypy

test: lint
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest

# The quick lane while you work: everything but the tests marked slow (about half the time).
test-fast: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -m "not slow" -p no:cacheprovider

reproduce: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m dsgc_fast.demo
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m dsgc_bench reproduce --out $(OUT)

# A long randomized campaign over every entry point (minutes); `make test` runs a short one.
fuzz: $(STAMP)
	DSGC_HYPOTHESIS_PROFILE=long $(PY) -m pytest tests -k fuzz -p no:cacheprovider
	DSGC_HYPOTHESIS_PROFILE=long DSGC_SOAK_CYCLES=20000 DSGC_CRASH_KILLS=25 $(PY) -m pytest -p no:cacheprovider \
		tests/test_invariants.py tests/test_soak.py tests/test_store_crash.py tests/test_store_crash_save.py

# asv against the installed package, results under .asv/ (git-ignored); BENCH=regex filters.
# OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are unset for this command only (they slow current numpy).
ASV := env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(abspath $(VENV))/bin/asv
bench: $(STAMP)
	cd asv_bench && $(ASV) machine --yes
	cd asv_bench && $(ASV) run --python=same --show-stderr --set-commit-hash "$$(git rev-parse HEAD)" $(if $(BENCH),--bench "$(BENCH)")
	cd asv_bench && $(ASV) publish

# The documentation site, strictly (any warning fails the build), into site/ (git-ignored).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# The sdist and the wheel under dist/ (built in an isolated environment), checked by twine.
dist: $(STAMP)
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(PY) -m twine check --strict dist/*

# The built wheel with each framework extra, in fresh virtual environments next to the lowest and
# the newest versions its ranges allow, each running that extra's integration tests (minutes;
# needs PyPI or a pip cache). EXTRAS=langchain narrows it; the environments live under build/.
EXTRAS ?= langchain openai-agents
check-ranges: dist
	$(PY) tools/check_ranges.py --wheel dist/*.whl --extras $(EXTRAS)

clean:
	rm -rf $(VENV) .asv .pytest_cache .hypothesis .numba-cache build dist
