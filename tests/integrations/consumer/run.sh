#!/usr/bin/env bash
# ctest entry install_consumer: installs this build with `cmake --install`
# into a scratch prefix, builds the consumer project against it with
# find_package(faultline), and runs its GoogleTest conformance tests with the
# installed binary ($FAULTLINE unset). Usage: run.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
for f in bin/faultline lib/libfaultline_probe.a lib/libfaultline_gtest.a include/faultline/probe.h \
         include/faultline/gtest.h lib/faultline/libfaultline_preload.so share/faultline/python/sitecustomize.py \
         lib/cmake/faultline/faultlineConfig.cmake; do
  [ -e "$scratch/prefix/$f" ] || { echo "install_consumer: $f is not installed" >&2; exit 1; }
done
cmake -S "$here" -B "$scratch/build" -G Ninja -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build"
# The C trainer writes its events through the probe.
FAULTLINE_EVENTS="$scratch/c-events.jsonl" "$scratch/build/tiny-trainer-c"
grep -q '"ev":"step_end"' "$scratch/c-events.jsonl" || { echo "install_consumer: the C trainer wrote no step_end event" >&2; exit 1; }
unset FAULTLINE
"$scratch/build/conformance_test"
