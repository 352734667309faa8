#!/bin/sh
# tests/fresh_clone.sh - `make check-fresh`: what CI does, on this machine.
#
# Clones the committed HEAD (uncommitted changes are not in it, as they
# are not in a submission) into a new folder and runs .ci/run there, with
# no build folder, virtual environment or fuzz output from this checkout,
# so that a missing source in a build list or a missing install step fails
# here before it fails CI.  Prints the wall time; the folder is removed
# unless KEEP=1.
#
#   sh tests/fresh_clone.sh        (or: make check-fresh)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dest=$(mktemp -d "${TMPDIR:-/tmp}/nrtpy-fresh-XXXXXX")
cleanup() {
    if [ "${KEEP:-0}" = 1 ]; then
        echo "fresh clone kept in $dest"
    else
        rm -rf "$dest"
    fi
}
trap cleanup EXIT INT TERM

git clone -q "$root" "$dest/nrtpy"
# CI finds shared/ beside the checkout; a clone here has none unless the
# checkout has one beside it.
if [ -d "$root/../shared" ] && [ ! -e "$dest/shared" ]; then
    ln -s "$root/../shared" "$dest/shared"
fi
echo "fresh clone of $(git -C "$root" rev-parse --short HEAD) in $dest/nrtpy"
start=$(date +%s)
status=0
(cd "$dest/nrtpy" && CI=true bash .ci/run </dev/null) || status=$?
end=$(date +%s)
echo "fresh clone: .ci/run exited $status after $((end - start)) s"
exit "$status"
