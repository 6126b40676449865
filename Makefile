# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SPEEDBENCH_SOURCES ?= $(abspath ../shared/sources)
SPEEDBENCH_MODELS ?= $(abspath ../shared/models/stories260K)
export SPEEDBENCH_SOURCES SPEEDBENCH_MODELS

OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 \
	GRADIO_ANALYTICS_ENABLED=False TOKENIZERS_PARALLELISM=false

.PHONY: install test demo clean

$(VENV)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all]'
	touch $@

install: $(VENV)/.installed

test: install
	$(OFFLINE) $(PY) -m pytest $(PYTEST_ARGS)

demo: install
	$(OFFLINE) $(VENV)/bin/speedbench demo --sources $(SPEEDBENCH_SOURCES)

clean:
	rm -rf $(VENV) speed-bench demo-output
