# nrtpy: two commands do everything on a fresh machine.
#   make demo   create .venv, build and install nrtpy, run the quickstart
#   make test   same set-up, then the C tests of the emulator and pytest
#   make test-sanitize   every C test under ThreadSanitizer and under
#               ASan+UBSan, and the Python thread tests under ThreadSanitizer
#               (tests/sanitize/run.sh; build/tsan, build/asan, build/tsan-py;
#               CI runs it after make test)
# Other targets: make bench, make test-fuzz, make format (and make
# test-format, which make test runs), make clean, and make check-fresh
# (.ci/run in a fresh clone of HEAD, as CI runs it: before every push).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BUILD  := build

.PHONY: all demo test test-c test-python test-fuzz test-sanitize test-format install deps bench format clean check-fresh

all: test

# Build tools go into the venv so the project builds without isolation
# (faster, and the C tests use the same meson).  From Debian, when missing:
# zlib headers (the NEFF reader), g++ (the headers are tested as C++ too)
# and cmake (a test builds a CMake client against NEURON_ROOT).  And
# libfabric (collectives between processes; its headers at build time, the
# library loaded with dlopen at run time): optional, the runtime falls back
# to its own TCP transport without it, so a failed install only warns.
$(VENV)/.deps: pyproject.toml
	@fabric=""; \
	[ -e /usr/include/rdma/fabric.h ] || fabric="libfabric-dev"; \
	{ ldconfig -p 2>/dev/null | grep -q 'libfabric\.so\.1 '; } || \
	    fabric="$$fabric libfabric1"; \
	if [ -n "$$fabric" ]; then \
	    echo "installing $$fabric"; \
	    (apt-get install -y -q $$fabric || (apt-get update -q && \
	     apt-get install -y -q $$fabric)) >/dev/null 2>&1 || \
	    echo "warning: $$fabric not installed: collectives between" \
	         "processes will use TCP, and their libfabric tests skip"; \
	fi
	@missing=""; \
	[ -e /usr/include/zlib.h ] || missing="$$missing zlib1g-dev"; \
	command -v c++ >/dev/null || command -v g++ >/dev/null || missing="$$missing g++"; \
	command -v cmake >/dev/null || missing="$$missing cmake"; \
	if [ -n "$$missing" ] && command -v apt-get >/dev/null; then \
	    echo "installing$$missing"; \
	    (apt-get install -y -q $$missing || \
	     (apt-get update -q && apt-get install -y -q $$missing)) >/dev/null; \
	fi
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "meson-python>=0.15" "meson>=1.4" ninja \
	    "numpy>=2.0" "ml_dtypes>=0.7" "pytest>=7"
	touch $@

# JAX (CPU) is a test dependency only, never a runtime one: the HLO
# compiler's tests compare its NEFFs with XLA:CPU (tests/python/test_hlo_*.py).
$(VENV)/.test-deps: $(VENV)/.deps
	$(PY) -m pip install -q "jax>=0.4.30"
	touch $@

deps: $(VENV)/.deps

install: deps
	$(PY) -m pip install -q --no-build-isolation --no-deps -Cbuild-dir=$(BUILD)/py .

demo: install
	$(PY) examples/quickstart.py

# A skipped C test fails the run: meson reports it, and nothing here may
# skip (tests/c/check_skips.sh reads the log).
C_SETUP := -Dpython=false -Dtests=true -Dtest_python=$(CURDIR)/$(PY)
test-c: deps
	@# (a build folder from before an option existed cannot be reconfigured)
	@$(VENV)/bin/meson setup --reconfigure $(BUILD)/c $(C_SETUP) >/dev/null 2>&1 || \
	    (rm -rf $(BUILD)/c && $(VENV)/bin/meson setup $(BUILD)/c $(C_SETUP) >/dev/null)
	$(VENV)/bin/meson test -C $(BUILD)/c --print-errorlogs
	@sh tests/c/check_skips.sh $(BUILD)/c/meson-logs/testlog.json

test-python: install $(VENV)/.test-deps
	$(PY) -m pytest -q tests/python

# The fuzz targets, each for a bounded time: the NEFF container, program
# loading and a bounded run (libFuzzer when clang has it, else the same
# target under gcc's sanitizers: tests/fuzz/run.sh, built by meson from the
# library's own objects), and the HLO compiler on mutated modules, with
# the NEFFs it writes run on the emulator (tests/fuzz/fuzz_hlo.py).
FUZZ_SECONDS ?= 20
test-fuzz: install
	FUZZ_SECONDS=$(FUZZ_SECONDS) MESON=$(CURDIR)/$(VENV)/bin/meson \
	    BUILD=$(BUILD) sh tests/fuzz/run.sh
	$(PY) tests/fuzz/fuzz_hlo.py $(FUZZ_SECONDS)

test: test-format test-c test-python test-fuzz

# Any sanitizer report fails the target; nothing is suppressed.  The
# emulator is built without the CPU dispatch for TSan (-Dcpu_dispatch=false).
test-sanitize: deps
	MESON=$(CURDIR)/$(VENV)/bin/meson PYTHON=$(CURDIR)/$(PY) \
	    BUILD=$(BUILD) sh tests/sanitize/run.sh

# Every benchmark runs, even after one misses its target (a noisy ratio
# would otherwise hide the rest); the target fails at the end, naming them.
# bench_ops last: it exits non-zero when an op is below its floor.
BENCHES := bench_tensor_copy bench_models bench_call_path bench_neff_load \
	bench_elementwise bench_reduce bench_fusion bench_collectives bench_nki \
	bench_ops
bench: install
	@failed=""; \
	for b in $(BENCHES); do \
	    echo "$(PY) bench/$$b.py"; \
	    $(PY) bench/$$b.py || failed="$$failed $$b"; \
	done; \
	if [ -n "$$failed" ]; then \
	    echo "make bench: below a target or floor:$$failed" >&2; exit 1; \
	fi

# The C sources in the repo's style (.clang-format), by a pinned
# clang-format from PyPI: 14 to 16 format this tree alike, 17 and later
# move a few dozen lines, so one version for everyone.  make test checks
# it (test-format); make format rewrites the files.
CLANG_FORMAT_VERSION := 16.0.6
C_SOURCES = include/nrt/*.h src/emulator/*/*.[ch] src/ext/*.[ch] tests/c/*.[ch] \
	tests/stub/*.c tests/fuzz/*.[ch]
$(VENV)/.format-deps: $(VENV)/.deps
	$(PY) -m pip install -q "clang-format==$(CLANG_FORMAT_VERSION)"
	touch $@

format: $(VENV)/.format-deps
	$(VENV)/bin/clang-format -i $(C_SOURCES)

test-format: $(VENV)/.format-deps
	@$(VENV)/bin/clang-format --dry-run --Werror $(C_SOURCES) || \
	    { echo "C sources not formatted: run make format" >&2; exit 1; }

check-fresh:
	sh tests/fresh_clone.sh

clean:
	rm -rf $(BUILD) $(VENV)
