# steerlsp developer commands. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-stamp

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "steerlsp needs Python >= 3.11; $(PYTHON) is $$($(PYTHON) -V 2>&1). Run: make PYTHON=python3.11 ..."; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# The CPU build of torch (on disk here); a bare `torch` requirement would
	# pull several GB of CUDA wheels. GPU users install their own torch first.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP) ## Create .venv with steerlsp and its dev extras

test: $(STAMP) ## Set up if needed, then run the whole test suite (every tier)
	@# The slowest tests are listed at the end: the suite's time is watched in CI's log.
	$(PY) -m pytest -q --durations=30

test-unit: $(STAMP) ## Unit tests only: pure, in-process, under two minutes
	$(PY) -m pytest -q tests/unit

test-e2e: $(STAMP) ## End-to-end tests: the real steerlsp process and pylsp, no model
	$(PY) -m pytest -q tests/e2e

test-model: $(STAMP) ## Real-model tests: the embedded default model
	$(PY) -m pytest -q tests/model

test-editors: $(STAMP) ## Editor tests: Neovim, Emacs, VS Code, Helix
	$(PY) -m pytest -q tests/editors

lint: $(STAMP) ## ruff format --check, ruff check, mypy
	$(VENV)/bin/ruff format --check steerlsp server models prompts tests bench
	$(VENV)/bin/ruff check steerlsp server models prompts tests bench
	@# The subpackages sit at the top level and the install maps them into steerlsp;
	@# mypy finds modules by path only, so it reads them through a tree laid out as
	@# installed (checked as server.*, every steerlsp.* import would be Any).
	rm -rf .mypy-tree && mkdir -p .mypy-tree/steerlsp
	ln -s $(CURDIR)/steerlsp/* $(CURDIR)/server $(CURDIR)/models $(CURDIR)/prompts .mypy-tree/steerlsp/
	cd .mypy-tree && $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml -p steerlsp

format: $(STAMP) ## Apply ruff format and safe fixes
	$(VENV)/bin/ruff format steerlsp server models prompts tests bench
	$(VENV)/bin/ruff check --fix steerlsp server models prompts tests bench

# llama.cpp's own server, for bench/served.py (built from the llama.cpp that
# llama-cpp-python vendors, linked statically; about 4 min on two cores, once).
LLAMA_SERVER := bench/.build/llama-server
$(LLAMA_SERVER):
	PYTHON=$(PY) bash bench/build_llama_server.sh $@

bench: $(STAMP) ## Benchmarks: decode speed (our loop vs generate() vs llama.cpp), KV prefix reuse while typing, scoring candidate names whole (token tree vs batch), proxy latency (vs direct pylsp and an echo server), completions (vs generate()), keystroke latency vs document size, the analysis instance at obj., steering's latency as users meet it (steered vs unsteered, documents just opened, read, typed in; determinism over two runs), the decode loop while the analysis works (OpenMP wait policies), the fault suite (fuzz, cancel storm, kills), Helix's completion menu (the AI item, the menu's latency vs pylsp), a shared inference server (bench-served)
	$(PY) -m pip install --quiet -e '.[bench]' || echo "llama-cpp-python did not build: decode_bench runs without its llama.cpp column"
	PYTHONPATH=. $(PY) bench/decode_bench.py --out bench/results
	PYTHONPATH=. $(PY) bench/prefix_reuse.py --out bench/results
	PYTHONPATH=. $(PY) bench/score_names.py --out bench/results
	PYTHONPATH=. $(PY) bench/score_names.py --context 800 --out bench/results
	$(PY) bench/proxy_latency.py --requests 1000 --out bench/results
	PYTHONPATH=. $(PY) bench/completion_bench.py --out bench/results
	$(PY) bench/keystroke_latency.py --out bench/results
	$(PY) bench/analysis_latency.py --json bench/results/analysis_latency.json
	PYTHONPATH=. $(PY) bench/steering_latency.py --out bench/results
	PYTHONPATH=. $(PY) bench/decode_contention.py --out bench/results
	PYTHONPATH=. $(PY) bench/lint_contention.py --out bench/results
	$(PY) bench/fuzz.py --frames 100000 --storm 1000 --kills 50 --hostile 600 --out bench/results/fuzz.json
	$(PY) bench/helix_fallback.py --out bench/results
	$(MAKE) bench-served

bench-served: $(STAMP) $(LLAMA_SERVER) ## A shared inference server: agreement with the in-process model, steered vs unsteered through the API, 1 to 8 editors on one server (llama-cpp-python's server and llama.cpp's llama-server)
	PYTHONPATH=. $(PY) bench/served.py --out bench/results
	PYTHONPATH=. $(PY) bench/served.py --llama-server $(LLAMA_SERVER) --out bench/results

bench-tasks: $(STAMP) ## Evaluation: the task suite unsteered, sampled, steered and the steering ablations, the edit-similarity track, and the reference bodies teacher-forced (how far steering could go)
	$(PY) bench/run_tasks.py --configs baseline,sampled,steered,walk-only,hints-only,hints,no-names,no-imports,boost,mask,no-deprecation --out bench/results
	$(PY) bench/edit_similarity.py --positions 60 --out bench/results
	PYTHONPATH=. $(PY) bench/teacher_forcing.py --out bench/results

bench-next-id: $(STAMP) ## Next-identifier accuracy after `.` (tasks and third-party code), steering configurations side by side, test split; and the keyword-argument track
	$(PY) bench/next_identifier.py --out bench/results
	$(PY) bench/next_identifier.py --track keywords --out bench/results

demo: $(STAMP) ## Play an editor session against the example project (steerlsp/example) and print what an editor shows
	$(PY) -m steerlsp.demo

clean: ## Remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .mypy-tree *.egg-info

.PHONY: help setup test test-unit test-e2e test-model test-editors lint format bench bench-served bench-tasks bench-next-id demo clean
