#!/bin/sh
# tests/sanitize/run.sh - `make test-sanitize`: the tests under the
# sanitizers; exit non-zero on any sanitizer report or test failure.
#
#   1. Canaries: a data race, a heap overflow and a signed overflow, each
#      built with the sanitizer and the options below, must fail.  This
#      proves that a report fails the run (a sanitizer that only prints
#      would let every later step pass).
#   2. Every C test under ThreadSanitizer ($BUILD/tsan).  The emulator is
#      built with -Dcpu_dispatch=false: TSan crashes at start-up on the
#      ifunc resolvers of the target_clones dispatch (src/emulator/kernels/simd.h).
#   3. Every C test under AddressSanitizer + UndefinedBehaviorSanitizer,
#      leak checking on ($BUILD/asan).
#   4. The Python thread tests (pytest -k thread: tests/python/test_threads.py
#      and the thread tests of the model, process and system-path files)
#      under TSan, with the extension and the emulator built with TSan
#      ($BUILD/tsan-py, installed into $BUILD/tsan-py/site).  CPython is
#      not instrumented, so libtsan is preloaded: an instrumented
#      extension cannot load it into a running interpreter (static TLS).
#      The GIL and CPython's threads are pthread mutexes, condition
#      variables and pthread_create, which TSan intercepts, so it sees the
#      same happens-before edges as in an instrumented interpreter.
#
# No report is suppressed.
#
# Environment: MESON (default .venv/bin/meson), PYTHON (default
# .venv/bin/python: NumPy, ml_dtypes, pytest), BUILD (default build),
# CC (default cc, for the canaries; the one meson uses).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
meson=${MESON:-$root/.venv/bin/meson}
python=${PYTHON:-$root/.venv/bin/python}
build=${BUILD:-build}
cc=${CC:-cc}
case $build in /*) ;; *) build=$root/$build ;; esac

# Any report ends the process with SIGABRT (abort_on_error): meson and
# pytest see a crash, whatever the test's own exit status would be.
export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
# gcc 12's TSan cannot map its shadow memory when the kernel randomises
# mmap with more than 28 bits (vm.mmap_rnd_bits); without ASLR it always
# can.  setarch -R turns ASLR off for the one command.
no_aslr=
if setarch "$(uname -m)" -R true 2>/dev/null; then
    no_aslr="setarch $(uname -m) -R"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

# expect_report NAME SANITIZER: build the canary read from stdin with
# -fsanitize=SANITIZER and check that running it fails.
expect_report() {
    cat >"$work/$1.c"
    "$cc" -std=c11 -g -O1 -pthread -fsanitize="$2" -fno-sanitize-recover=all \
        "$work/$1.c" -o "$work/$1"
    if $no_aslr "$work/$1" >"$work/$1.log" 2>&1; then
        echo "FAIL: the $1 canary ran clean under -fsanitize=$2" >&2
        exit 1
    fi
    grep -q "ERROR\|WARNING: ThreadSanitizer\|runtime error" "$work/$1.log" || {
        echo "FAIL: the $1 canary failed without a sanitizer report:" >&2
        cat "$work/$1.log" >&2
        exit 1
    }
    echo "sanitize: $1 canary reported, as it must"
}

expect_report race thread <<'EOF'
#include <pthread.h>
static int shared;
static void *bump(void *arg) { (void)arg; shared++; return NULL; }
int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, bump, NULL);
    shared++;
    pthread_join(t, NULL);
    return 0;
}
EOF
expect_report overflow address <<'EOF'
#include <stdlib.h>
int main(int argc, char **argv)
{
    (void)argv;
    volatile char *p = malloc(8);
    p[7 + argc] = 1; /* one past the end */
    free((void *)p);
    return 0;
}
EOF
expect_report signed_overflow undefined <<'EOF'
#include <limits.h>
int main(int argc, char **argv)
{
    (void)argv;
    volatile int big = INT_MAX;
    return big + argc > 0;
}
EOF

# setup DIR OPTION...: configure DIR, or reconfigure it in place (a folder
# from before an option existed cannot be reconfigured: start it again).
setup() {
    dir=$1
    shift
    "$meson" setup --reconfigure "$dir" "$@" >"$work/setup.log" 2>&1 ||
        (rm -rf "$dir" && "$meson" setup "$dir" "$@" >"$work/setup.log" 2>&1) ||
        { cat "$work/setup.log" >&2; exit 1; }
}

# A meson test run that fails on a sanitizer report (the test aborts), a
# failed test or a skipped one.
c_tests() {
    $no_aslr "$meson" test -C "$1" --print-errorlogs --timeout-multiplier=4
    sh "$root/tests/c/check_skips.sh" "$1/meson-logs/testlog.json"
}

c_setup="-Dpython=false -Dtests=true -Dtest_python=$python
         -Dbuildtype=debugoptimized -Db_lundef=false"

echo "sanitize: C tests under ThreadSanitizer"
# shellcheck disable=SC2086
setup "$build/tsan" $c_setup -Db_sanitize=thread -Dcpu_dispatch=false
"$meson" compile -C "$build/tsan" >/dev/null
# The option must leave no ifunc in the library (step 2 above).
if readelf -sW "$build/tsan/src/emulator/libnrt.so.1" | grep -q IFUNC; then
    echo "FAIL: -Dcpu_dispatch=false left an ifunc in libnrt.so.1" >&2
    exit 1
fi
c_tests "$build/tsan"

echo "sanitize: C tests under AddressSanitizer + UndefinedBehaviorSanitizer"
# (-fno-sanitize-recover: a UBSan report aborts even where the runtime's
# options were not read, as in a child process with its own environment)
# shellcheck disable=SC2086
setup "$build/asan" $c_setup -Db_sanitize=address,undefined \
    -Dc_args=-fno-sanitize-recover=all
"$meson" compile -C "$build/asan" >/dev/null
c_tests "$build/asan"

echo "sanitize: Python thread tests under ThreadSanitizer"
site=$build/tsan-py/site
setup "$build/tsan-py" -Dpython=true -Dbuildtype=debugoptimized \
    -Db_lundef=false -Db_sanitize=thread -Dcpu_dispatch=false \
    --prefix="$build/tsan-py/prefix" \
    -Dpython.platlibdir="$site" -Dpython.purelibdir="$site"
"$meson" install -C "$build/tsan-py" --quiet >/dev/null
# The TSan runtime the library was linked with, preloaded into the
# interpreter.
libtsan=$(ldd "$site/nrtpy/lib/libnrt.so.1" | sed -n 's/.*libtsan[^ ]* => \([^ ]*\) .*/\1/p')
if [ -z "$libtsan" ]; then
    echo "FAIL: $site/nrtpy/lib/libnrt.so.1 is not linked with libtsan" >&2
    exit 1
fi
export LD_PRELOAD="$libtsan" PYTHONPATH="$site"
# (the venv holds an uninstrumented nrtpy too: the tests must not use it)
$no_aslr "$python" -c "import nrtpy, sys; sys.exit(not nrtpy.__file__.startswith('$site/'))" || {
    echo "FAIL: the Python tests would not import nrtpy from $site" >&2
    exit 1
}
$no_aslr "$python" -m pytest -q -p no:cacheprovider -k thread tests/python
