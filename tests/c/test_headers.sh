#!/bin/sh
# test_headers.sh INCLUDE_DIR CC CXX
#
# Each public header compiles on its own and together with the others, as
# C11 and as C++11, as real clients include any subset of them.  The enum
# typedefs are anonymous as in the runtime's headers, so C++ mangles a
# parameter of type nrt_tensor_placement_t under the typedef's name:
# checked on the symbol a C++ compiler emits.
set -eu

include=$1
cc=$2
cxx=$3

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

command -v "$cxx" >/dev/null 2>&1 || fail "no C++ compiler '$cxx'"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

headers=$(cd "$include" && ls nrt/*.h)
[ -n "$headers" ] || fail "no headers in $include/nrt"

compile() { # NAME LINES...
    name=$1
    shift
    printf '%s\n' "$@" 'int nrt_header_test_anchor;' >"$tmp/$name.c"
    cp "$tmp/$name.c" "$tmp/$name.cpp"
    "$cc" -std=c11 -pedantic -Wall -Wextra -Werror -I"$include" \
        -c "$tmp/$name.c" -o "$tmp/$name.c.o" ||
        fail "$name does not compile as C11"
    "$cxx" -std=c++11 -Wall -Wextra -Werror -I"$include" \
        -c "$tmp/$name.cpp" -o "$tmp/$name.cpp.o" ||
        fail "$name does not compile as C++11"
}

n=0
all=""
for h in $headers; do
    compile "$(basename "$h" .h)" "#include \"$h\""
    all="$all
#include \"$h\""
    n=$((n + 1))
done
# shellcheck disable=SC2086
compile all_headers "$all"
# Twice in reverse order: include guards and no order dependence.
compile all_twice_reversed "$(printf '%s\n' "$all" | sort -r)" "$all"

# Anonymous enum typedefs: C++ names them by the typedef.
cat >"$tmp/mangle.cpp" <<'CPP'
#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
void nrt_header_test_f(nrt_tensor_placement_t, nrt_dtype_t, nrta_xu_t) {}
CPP
"$cxx" -std=c++11 -I"$include" -c "$tmp/mangle.cpp" -o "$tmp/mangle.o"
nm "$tmp/mangle.o" | grep -q \
    '_Z17nrt_header_test_f22nrt_tensor_placement_t11nrt_dtype_t9nrta_xu_t' ||
    fail "enum typedefs are not anonymous: $(nm "$tmp/mangle.o")"

echo "ok: $n headers compile alone and together as C11 and C++11"
