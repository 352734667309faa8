#!/bin/sh
# test_exports.sh [--require-all] [--calls FILE] LIBRARY INCLUDE_DIR CC...
#
# The emulator exports nothing but nrt_*, nrta_* and nrtemu_* functions, each one
# declared in the public headers, under the SONAME libnrt.so.1.  With
# --require-all, every function the headers declare must be exported too;
# without it the missing ones are only listed (parts of the ABI may land
# in the library at different times).  With --calls FILE, every exported
# function must be called in FILE (the C test of the whole ABI).
set -eu

require_all=0
calls=""
if [ "${1:-}" = "--require-all" ]; then
    require_all=1
    shift
fi
if [ "${1:-}" = "--calls" ]; then
    calls=$2
    shift 2
fi
lib=$1
include=$2
shift 2

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$soname" = "libnrt.so.1" ] || fail "SONAME is '$soname', not libnrt.so.1"

nm -D --defined-only "$lib" | awk '{ print $NF }' | sort -u >"$tmp/exported"
[ -s "$tmp/exported" ] || fail "no exported symbols in $lib"

# Declarations after preprocessing, so that comments cannot add names.
for h in "$include"/nrt/*.h; do printf '#include "nrt/%s"\n' "${h##*/}"; done |
    "$@" -E -P -I"$include" -x c - |
    grep -o '\<\(nrt\|nrta\|nrtemu\)_[a-z0-9_]*[[:space:]]*(' |
    sed 's/[[:space:]]*($//' | sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || fail "no declarations found in $include"

if grep -v -E '^(nrt|nrta|nrtemu)_' "$tmp/exported" >"$tmp/stray"; then
    cat "$tmp/stray" >&2
    fail "symbols exported outside nrt_*/nrta_*/nrtemu_* (above)"
fi
comm -23 "$tmp/exported" "$tmp/declared" >"$tmp/undeclared"
if [ -s "$tmp/undeclared" ]; then
    cat "$tmp/undeclared" >&2
    fail "exported but not declared in the public headers (above)"
fi
comm -13 "$tmp/exported" "$tmp/declared" >"$tmp/missing"
if [ -s "$tmp/missing" ]; then
    echo "declared but not exported:"
    sed 's/^/  /' "$tmp/missing"
    [ "$require_all" = 0 ] || fail "declared functions missing (above)"
fi
if [ -n "$calls" ]; then
    while read -r name; do
        grep -q "\<$name(" "$calls" || echo "$name"
    done <"$tmp/exported" >"$tmp/uncalled"
    if [ -s "$tmp/uncalled" ]; then
        cat "$tmp/uncalled" >&2
        fail "exported but never called in $calls (above)"
    fi
fi
echo "ok: $(wc -l <"$tmp/exported") symbols exported," \
    "$(wc -l <"$tmp/missing") declared ones missing, SONAME $soname"
