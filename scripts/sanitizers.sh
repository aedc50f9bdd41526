#!/usr/bin/env bash
# Builds the runtime (no compiler) with ThreadSanitizer and AddressSanitizer
# and runs the unit, conformance and stress tests under each.
#
#   OSPREY_SANITIZERS  which to run (default: "tsan asan")
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${OSPREY_JOBS:-2}"
tests='^(base_test|hal_test|hal_local_test|task_executor_test|task_executor_stress_test|cpu_task_device_test|cpu_task_stress_test|drivers_cpu_sync_cts|drivers_cpu_task_cts|drivers_npu_test|drivers_npu_cts)$'

for sanitizer in ${OSPREY_SANITIZERS:-tsan asan}; do
  upper=$(echo "$sanitizer" | tr a-z A-Z)
  dir="$root/build-$sanitizer"
  echo "== $sanitizer: configure and build ($dir)"
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DOSPREY_BUILD_COMPILER=OFF -DOSPREY_BUILD_SAMPLES=OFF -DOSPREY_ENABLE_"$upper"=ON >/dev/null
  targets=$(echo "$tests" | tr -d '^$()' | tr '|' ' ')
  # Build only the test binaries that exist in this configuration.
  available=()
  for t in $targets; do
    if ninja -C "$dir" -t query "$t" >/dev/null 2>&1; then available+=("$t"); fi
  done
  cmake --build "$dir" -j"$jobs" --target "${available[@]}"
  echo "== $sanitizer: run"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ASAN_OPTIONS="detect_leaks=1" \
    ctest --test-dir "$dir" -R "$tests" --output-on-failure -j"$jobs"
done
