# kcoord — one command to install and run the main job (`make demo`), one to install and run every test (`make test`).
# Installs Debian's graphviz and a Java 17 runtime when missing (root or sudo), and the pinned Python deps in .venv.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all setup system-deps demo test test-fast lint gen lock clean bench

all: test

system-deps:
	@if ! command -v dot >/dev/null 2>&1 || ! java -version 2>&1 | grep -qE 'version "(17|18|19|2[0-9])'; then \
	  echo "installing Debian packages: graphviz, openjdk-17-jre-headless"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz openjdk-17-jre-headless >/dev/null; \
	fi

$(STAMP): pyproject.toml requirements.lock
	$(MAKE) system-deps
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.lock
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/kcoord demo

# the style guide's "ruff and mypy --strict clean" is part of the tests (14 s)
test: lint
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

# mypy cannot follow the editable install's folder mapping (kcoord.model = model/, ...), so it checks a symlink tree
# laid out like the installed package.
TYPECHECK := build/typecheck/kcoord
lint: setup
	$(BIN)/ruff check .
	rm -rf build/typecheck && mkdir -p $(TYPECHECK)
	for f in kcoord/*.py; do ln -s ../../../$$f $(TYPECHECK)/; done
	ln -s ../../../model $(TYPECHECK)/model && ln -s ../../../impl $(TYPECHECK)/impl
	ln -s ../../../conformance $(TYPECHECK)/conformance && ln -s ../../../spec $(TYPECHECK)/spec
	cd build/typecheck && ../../$(BIN)/mypy --config-file ../../pyproject.toml -p kcoord

gen: setup
	$(BIN)/kcoord gen

bench: setup
	$(BIN)/python -m benchmarks

# Re-pin every transitive dependency after changing pyproject.toml.
lock:
	rm -rf .lockenv && $(PYTHON) -m venv .lockenv && .lockenv/bin/pip install -q --upgrade pip && \
	.lockenv/bin/pip install -q ".[test]" && .lockenv/bin/pip freeze --exclude kcoord > requirements.lock && rm -rf .lockenv

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache spark-warehouse metastore_db
