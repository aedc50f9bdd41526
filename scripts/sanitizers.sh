#!/usr/bin/env bash
# Builds the runtime (no compiler) with ThreadSanitizer and with
# AddressSanitizer + UndefinedBehaviorSanitizer, and runs the unit,
# conformance and stress tests under each; the ASan + UBSan tree also runs
# the VM, embedding API and tool tests and the e2e runtime tests
# (tests/e2e/runtime: osprey-run, osprey-benchmark and osprey-dump on modules
# built by the VM module builder, no compiler needed).
#
#   OSPREY_SANITIZERS  which to run (default: "tsan asan")
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${OSPREY_JOBS:-2}"
runtime_tests='base_test|hal_test|hal_local_test|task_executor_test|task_executor_stress_test|cpu_task_device_test|cpu_task_stress_test|drivers_cpu_sync_cts|drivers_cpu_task_cts|drivers_npu_test|drivers_npu_cts'
# Test binaries, and the tools and data the e2e runtime tests run.
asan_targets='vm_test vm_ops_test embed_test tools_common_test e2e_runtime_test osprey-run osprey-benchmark osprey-dump e2e_runtime_data'

for sanitizer in ${OSPREY_SANITIZERS:-tsan asan}; do
  dir="$root/build-$sanitizer"
  flags=(-DOSPREY_ENABLE_TSAN=ON)
  tests="^($runtime_tests)\$"
  targets=$(echo "$runtime_tests" | tr '|' ' ')
  if [[ "$sanitizer" == asan ]]; then
    flags=(-DOSPREY_ENABLE_ASAN=ON -DOSPREY_ENABLE_UBSAN=ON)
    tests="^($runtime_tests|vm_test|vm_ops_test|embed_test|tools_common_test|e2e_runtime_.*)\$"
    targets="$targets $asan_targets"
  fi
  echo "== $sanitizer: configure and build ($dir)"
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DOSPREY_BUILD_COMPILER=OFF -DOSPREY_BUILD_SAMPLES=OFF "${flags[@]}" >/dev/null
  # Build only the targets that exist in this configuration.
  available=()
  for t in $targets; do
    if ninja -C "$dir" -t query "$t" >/dev/null 2>&1; then available+=("$t"); fi
  done
  cmake --build "$dir" -j"$jobs" --target "${available[@]}"
  echo "== $sanitizer: run"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1" \
    ctest --test-dir "$dir" -R "$tests" --output-on-failure -j"$jobs"
done
