#!/usr/bin/env bash
# Runs the default test suite: builds the host tree (incrementally), runs
# every ctest except the long labels (stress, fuzz, bench), and checks
# that the runtime still cross-builds for a Cortex-M4.
#
#   OSPREY_TEST_LABELS_EXCLUDE  ctest -LE regex (default: stress|fuzz|bench)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${OSPREY_BUILD_DIR:-$root/build}"
exclude="${OSPREY_TEST_LABELS_EXCLUDE:-stress|fuzz|bench}"

if [[ ! -f "$build_dir/build.ninja" ]]; then
  OSPREY_SKIP_APT=1 bash "$root/scripts/setup.sh"
fi
cmake --build "$build_dir" -j"${OSPREY_JOBS:-2}"
ctest --test-dir "$build_dir" -LE "$exclude" --output-on-failure -j"${OSPREY_JOBS:-2}"

if [[ -x "$root/scripts/cross_build.sh" || -f "$root/scripts/cross_build.sh" ]]; then
  bash "$root/scripts/cross_build.sh"
fi
