# Two commands on a fresh machine (Python >= 3.10, no GPU needed):
#   make train   venv + CPU stack, then the main job: cold start -> GRPO -> evaluation
#                (CPU profile without a GPU; time and memory: README, printed from results/). QUICK=1: smoke size.
#   make test    venv + CPU stack, then ruff (lint), unit tests and every notebook executed with nbmake
#                (notebooks at smoke size: GRPO_QUICK=1)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# GSM8K beside the clone if present; otherwise empty, and the loader uses the hub or its sample.
GSM8K_DIR ?= $(wildcard $(abspath ../shared/data/gsm8k))
export GSM8K_DIR

.PHONY: venv train test lint format unit notebooks executed sync-notebooks clean

venv: $(STAMP)

$(STAMP): requirements/common.txt requirements/cpu.txt requirements/nodeps.txt requirements/cpu-nodeps.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements/cpu.txt
	$(BIN)/pip install -q --no-deps -r requirements/nodeps.txt -r requirements/cpu-nodeps.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

train: venv
	$(BIN)/python -m helpers train $(if $(PROFILE),--profile $(PROFILE)) $(if $(MAX_STEPS),--max-steps $(MAX_STEPS)) $(if $(QUICK),--quick)

test: lint unit notebooks

lint: venv  # ruff's linter and formatter, as configured in pyproject.toml; notebooks without outputs
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python tools/notebooks_have_no_outputs.py

format: venv  # rewrite in place what `make lint` checks
	$(BIN)/python -m ruff check --fix .
	$(BIN)/python -m ruff format .

unit: venv
	$(BIN)/python -m pytest tests

notebooks: venv
	GRPO_QUICK=1 $(BIN)/python -m pytest --nbmake --nbmake-timeout=1800 notebooks/*.ipynb

executed: venv  # notebooks/executed/: every notebook run on this CPU at the size it defaults to, outputs kept
	HF_HUB_OFFLINE=1 $(BIN)/python tools/execute_notebooks.py notebooks/*.ipynb --out notebooks/executed

sync-notebooks: venv
	$(BIN)/python tools/notebook_cells.py

clean:  # keeps the committed reference runs in results/
	rm -rf $(VENV) outputs
	git clean -fdXq results
