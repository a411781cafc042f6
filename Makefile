# The README's two commands: `make demo` (main job on the built-in sample) and `make test`.
# Everything installs into ./.venv; torch's CPU build is installed first when torch is absent,
# so pip never pulls the multi-GB CUDA build as a dependency.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.gotk-installed

.PHONY: setup demo test test-slow test-all lint bench clean

$(STAMP): pyproject.toml Makefile
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[test]"
	# KaTrain's own engine client for the real-client test of gotk analysis (tests/test_katrain.py): --no-deps,
	# since its other dependencies (a media player, screen and websocket helpers) serve only its window
	$(BIN)/python -m pip install -q --no-deps "katrain==1.20.0"
	$(BIN)/python -m pip install -q "kivy>=2.3,<2.4" "pysgf>=1.0,<2" "chardet>=5.2,<6"
	touch $@

setup: $(STAMP)

demo: setup
	$(BIN)/gotk demo

# the default run leaves out the tests marked slow (whole-archive scale repeats, bombs, random kills)
test: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow"

test-slow: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -m slow

test-all: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: setup
	$(BIN)/ruff check gotk tests bench

bench: setup
	$(BIN)/python -m pip install -q --no-deps dlgo==0.2
	$(BIN)/python bench/replay.py
	$(BIN)/python bench/encoders.py
	$(BIN)/python bench/encode.py

clean:
	rm -rf $(VENV) build *.egg-info out
