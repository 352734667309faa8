#!/bin/sh
# Fuzz the NEFF reader, and the loading and running of the emulator
# programs it holds, for ${FUZZ_SECONDS:-20} seconds; exit non-zero on any
# crash, sanitizer report or hang.
#
# The target is built by meson from the library's own objects
# (tests/fuzz/meson.build), with ASan and UBSan, in $BUILD/fuzz.  With a
# clang that supports -fsanitize=fuzzer, it is the libFuzzer target, run
# on a copy of the seed corpus (the corpus in the tree is never
# modified).  Without one, the same target is built with gcc around
# standalone_driver.c, which replays the corpus and then random mutations
# of it.
#
# Environment: FUZZ_SECONDS (default 20), CLANG (default clang), CC_GCC
# (default gcc), MESON (default .venv/bin/meson), BUILD (default build).
# Crash inputs are kept in tests/fuzz/out/.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${FUZZ_SECONDS:-20}
clang=${CLANG:-clang}
gcc=${CC_GCC:-gcc}
out="$here/out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$out"

meson=${MESON:-$root/.venv/bin/meson}
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
# A 64 MiB payload bound keeps a 1 MiB gzip input from inflating to
# 1 GiB: the ratio rule is exercised all the same.
payload='-DNRTEMU_NEFF_MAX_PAYLOAD=((uint64_t)64<<20)'
# The reader's rejections log at WARN; keep the run's output readable.
export NEURON_RT_LOG_LEVEL=QUIET
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

has_libfuzzer() {
    command -v "$clang" >/dev/null 2>&1 || return 1
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, '\
'unsigned long n) { (void)d; (void)n; return 0; }\n' >"$work/probe.c"
    "$clang" -fsanitize=fuzzer "$work/probe.c" -o "$work/probe" \
        >/dev/null 2>&1
}

# configure DIR CC ENGINE [--reconfigure]: the fuzz build in DIR.
configure() {
    CC=$2 "$meson" setup $4 "$1" -Dpython=false -Dtests=false -Dfuzz="$3" \
        -Dbuildtype=debugoptimized -Db_sanitize=address,undefined \
        -Db_lundef=false -Dwerror=false \
        "-Dc_args=['$payload','-fno-sanitize-recover=all']" \
        >"$work/setup.log" 2>&1
}

# build_target DIR CC ENGINE: configure (or reconfigure) and build the
# target (a folder from before an option existed cannot be reconfigured:
# start it again).
build_target() {
    configure "$1" "$2" "$3" --reconfigure ||
        (rm -rf "$1" && configure "$1" "$2" "$3") ||
        { cat "$work/setup.log" >&2; exit 1; }
    "$meson" compile -C "$1" fuzz_neff >"$work/build.log" 2>&1 ||
        { cat "$work/build.log" >&2; exit 1; }
}

if has_libfuzzer; then
    echo "fuzz: libFuzzer ($clang), $seconds s"
    build_target "$build/fuzz-libfuzzer" "$clang" libfuzzer
    cp -R "$here/corpus/neff" "$work/corpus"
    "$build/fuzz-libfuzzer/tests/fuzz/fuzz_neff" -max_total_time="$seconds" \
        -max_len=1048576 -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -dict="$here/program.dict" \
        -artifact_prefix="$out/" "$work/corpus"
else
    echo "fuzz: no libFuzzer; standalone driver ($gcc), $seconds s"
    build_target "$build/fuzz-standalone" "$gcc" standalone
    FUZZ_ARTIFACTS="$out" "$build/fuzz-standalone/tests/fuzz/fuzz_neff" \
        "$seconds" "$here/corpus/neff"
fi
