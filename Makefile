# kcoord — one command to install and run the main job (`make demo`), one to install and run every test (`make test`).
# Installs Debian's graphviz, Java 17 (JDK) and Maven when missing (root or sudo), the pinned Python deps in .venv, and
# Apache Kafka's jars (the reference broker, tools and Java client) from Maven Central into build/kafka (never committed),
# and compiles the Java harness of reference clients (conformance/reference/harness) against them.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all setup system-deps kafka harness spark-archive demo test test-fast test-adversarial lint gen gen-wire lock clean bench

all: test

system-deps:
	@if ! command -v dot >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1 \
	    || ! java -version 2>&1 | grep -qE 'version "(17|18|19|2[0-9])'; then \
	  echo "installing Debian packages: graphviz, openjdk-17-jdk-headless, maven"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz openjdk-17-jdk-headless maven \
	    >/dev/null; \
	fi

# Apache Kafka, the reference peer (conformance/reference/pom.xml pins the release): copied with its dependencies from
# Maven Central (or Maven's local cache) once, Maven's checksums checked (-C); a second make downloads nothing.
KAFKA_POM   := conformance/reference/pom.xml
KAFKA_LIBS  := build/kafka/libs
KAFKA_STAMP := build/kafka/.fetched-stamp

$(KAFKA_STAMP): $(KAFKA_POM)
	$(MAKE) system-deps
	@echo "fetching Apache Kafka $$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' $(KAFKA_POM)) jars into $(KAFKA_LIBS)"
	rm -rf $(KAFKA_LIBS) && mkdir -p $(KAFKA_LIBS)
	mvn -B -q -C -Dstyle.color=never -f $(KAFKA_POM) dependency:copy-dependencies \
	  -DoutputDirectory=$(abspath $(KAFKA_LIBS))
	touch $@

kafka: $(KAFKA_STAMP)

# The harness of reference clients (Kafka's Java client and tools driven from pytest): compiled against those jars into
# build/kafka/harness/classes (ignored); the stamp depends on every source file, so a second make compiles nothing.
HARNESS_SRC   := $(wildcard conformance/reference/harness/*.java)
HARNESS_DIR   := build/kafka/harness
HARNESS_STAMP := $(HARNESS_DIR)/.compiled-stamp

$(HARNESS_STAMP): $(HARNESS_SRC) $(KAFKA_STAMP)
	$(MAKE) system-deps
	rm -rf $(HARNESS_DIR) && mkdir -p $(HARNESS_DIR)/classes
	javac -d $(HARNESS_DIR)/classes -cp '$(KAFKA_LIBS)/*' --release 17 -Xlint:all -Werror $(HARNESS_SRC)
	touch $@

harness: $(HARNESS_STAMP)

$(STAMP): pyproject.toml requirements.lock
	$(MAKE) system-deps
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.lock
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

# The Spark driver JVM's class-data-sharing archive (conformance/traces/sparkcds.py): its ~13,000 classes mapped from one
# file instead of loaded from Spark's jars, ~2.5 JVM CPU-s off each local check's start. Built once per JDK and Spark
# jars into build/spark-cds (~2.5 min, ~190 MB); a second make only checks it (~1 s). A failure never fails setup:
# checks then start Spark as without it.
spark-archive: $(STAMP)
	@$(BIN)/kcoord spark-archive || echo "continuing without the Spark class-data archive"

setup: $(STAMP) $(KAFKA_STAMP) $(HARNESS_STAMP) spark-archive

demo: setup
	$(BIN)/kcoord demo

# the style guide's "ruff and mypy --strict clean" is part of the tests (14 s)
# (every test's time also goes to build/test-times.xml, JUnit XML: where the suite's minutes go, per file); two
# pytest-xdist workers, the shared Spark session's tests in one group and the shared Kafka cluster's in another
# (tests/conftest.py `xdist_group`)
test: lint
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --durations=25 --junitxml=build/test-times.xml

# issue 28's fault and fuzz cases alone (media damage, full disk, damaged files, stalled/idle peers, nulls)
ADVERSARIAL := tests/impl/test_media_damage.py tests/impl/test_damaged_metadata_files.py tests/impl/test_full_disk.py \
	tests/server/test_connection_bounds.py tests/server/test_bad_input.py tests/server/test_cli.py tests/test_cli.py
test-adversarial: setup
	$(BIN)/python -m pytest -q -m adversarial $(ADVERSARIAL)

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

# issue 31's Rust wire codec (impl/native/wire): regenerate src/generated/ from the Kafka clients jar's JSON. `make test`
# checks it is up to date, builds the crate into build/native/ and holds it byte for byte to kio
# (tests/impl/native/test_wire_codec.py; skipped without cargo)
gen-wire: $(KAFKA_STAMP)
	$(BIN)/python -m impl.native.wire.gen_codec

bench: setup
	$(BIN)/python -m benchmarks

# Re-pin every transitive dependency after changing pyproject.toml.
lock:
	rm -rf .lockenv && $(PYTHON) -m venv .lockenv && .lockenv/bin/pip install -q --upgrade pip && \
	.lockenv/bin/pip install -q ".[test]" && .lockenv/bin/pip freeze --exclude kcoord > requirements.lock && rm -rf .lockenv

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache spark-warehouse metastore_db
