# Two commands on a fresh machine: `make demo` (set up, run the gate on the built-in task) and
# `make test` (set up, run the tests). Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch first and pinned: an open torch range makes pip download a different multi-GB build.
TORCH_PINS := torch==2.14.1 torchvision==0.29.1

.PHONY: venv demo test lint ui clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q $(TORCH_PINS)
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

venv: $(BIN)/.installed

demo: venv
	$(BIN)/medgate run task=seg_phantom agent=monai_unet tier=lite budget=cpu
	$(BIN)/medgate gate

test: venv
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -ra

ui: venv
	$(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db

clean:
	rm -rf .medgate mlflow.db mlruns mlartifacts
