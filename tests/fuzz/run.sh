#!/bin/sh
# Fuzz the NEFF reader, and the loading and running of the emulator
# programs it holds, for ${FUZZ_SECONDS:-20} seconds; exit non-zero on any
# crash, sanitizer report or hang.
#
# With a clang that supports -fsanitize=fuzzer, this builds the libFuzzer
# target with ASan+UBSan and runs it on a copy of the seed corpus (the
# corpus in the tree is never modified).  Without one, the same target is
# built with gcc and the sanitizers around standalone_driver.c, which
# replays the corpus and then random mutations of it.
#
# Environment: FUZZ_SECONDS (default 20), CLANG (default clang), CC_GCC
# (default gcc).  Crash inputs are kept in tests/fuzz/out/.
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

emu="$root/src/emulator"
sources="$emu/json.c $emu/neff.c $emu/tar.c $emu/npy.c $emu/sha256.c
         $emu/md5.c $emu/dtype.c $emu/error.c $emu/env_parse.c
         $emu/strbuf.c $emu/program.c $emu/program_ops.c $emu/collective.c
         $emu/net.c $emu/fabric.c $emu/board.c
         $emu/program_validate.c $emu/program_run.c $emu/program_fuse.c
         $emu/convert.c
         $emu/kernel.c $emu/kernel_elementwise.c $emu/kernel_layout.c
         $emu/kernel_math_vec.c
         $emu/kernel_matmul.c $emu/kernel_reduce.c $emu/kernel_scatter.c
         $emu/kernel_sort.c $emu/kernel_collective.c $emu/kernel_table.c
         $emu/kernel_table16.c $emu/kernel_round16.c $emu/kernel_binary16.c
         $emu/kernel_where.c
         $emu/pool.c"
# A 64 MiB payload bound keeps a 1 MiB gzip input from inflating to
# 1 GiB: the ratio rule is exercised all the same.
flags="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
       -I$root/include -I$emu -I$here
       -DNRTEMU_NEFF_MAX_PAYLOAD=((uint64_t)64<<20)"
libs="-lz -lm -pthread"
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

if has_libfuzzer; then
    echo "fuzz: libFuzzer ($clang), $seconds s"
    # shellcheck disable=SC2086
    "$clang" $flags -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -DFUZZ_CUSTOM_MUTATOR \
        "$here/fuzz_neff.c" $sources $libs -o "$work/fuzz_neff"
    cp -R "$here/corpus/neff" "$work/corpus"
    "$work/fuzz_neff" -max_total_time="$seconds" -max_len=1048576 \
        -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -dict="$here/program.dict" -artifact_prefix="$out/" "$work/corpus"
else
    echo "fuzz: no libFuzzer; standalone driver ($gcc), $seconds s"
    # shellcheck disable=SC2086
    "$gcc" $flags -fsanitize=address,undefined -fno-sanitize-recover=all \
        "$here/fuzz_neff.c" "$here/standalone_driver.c" $sources $libs \
        -o "$work/fuzz_neff"
    FUZZ_ARTIFACTS="$out" "$work/fuzz_neff" "$seconds" "$here/corpus/neff"
fi
