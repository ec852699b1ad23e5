# The two commands of the README:
#   make serve   build the site and serve it on http://127.0.0.1:8000
#   make test    run every test
# Both install what they need first: a virtual environment (.venv), the npm
# packages (node_modules) and Debian's Chromium plus a Vulkan driver for the
# browser tests. Installs are skipped when already done.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=

.PHONY: setup serve test build bench system-packages facts-model

setup: $(VENV)/.installed node_modules/.installed system-packages

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,facts]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

system-packages:
	@if [ ! -x /usr/bin/chromium ] || ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium mesa-vulkan-drivers libvulkan1 fonts-dejavu-core; \
	fi

build: setup
	$(PY) build.py

serve: setup
	$(PY) build.py --serve --port 8000

facts-model: setup
	$(PY) -m facts --install-model

test: setup facts-model
	$(PY) -m facts --check
	$(PY) -m pytest -n 2 $(PYTEST_ARGS)

bench: setup
	$(PY) bench/bench_lab.py
