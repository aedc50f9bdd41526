#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang-19, AddressSanitizer
# and UndefinedBehaviorSanitizer in build-fuzz/, then runs each target for a
# while on its corpus (seeded from the project's test inputs) and prints
# executions, coverage and any crash it found.
#
#   scripts/fuzz.sh [TARGET...]     default: every target
#
#   OSPREY_FUZZ_SECONDS   seconds per target (default 60)
#   OSPREY_FUZZ_DIR       build directory (default <repo>/build-fuzz)
#   OSPREY_FUZZ_COMPILER  1 (default): also build the compiler and its
#                         ONNX-import target; 0: runtime targets only
#   OSPREY_FUZZ_RSS_MB    libFuzzer memory limit per run (default 2048)
#   OSPREY_JOBS           parallel build jobs (default 2)
#
# Crashes are written to <dir>/fuzz/artifacts/<target>/; the growing corpus
# stays in <dir>/tests/fuzz/corpus/<target>/. Exit status 1 if any target
# crashed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${OSPREY_FUZZ_DIR:-$root/build-fuzz}"
seconds="${OSPREY_FUZZ_SECONDS:-60}"
compiler=$([[ "${OSPREY_FUZZ_COMPILER:-1}" == 1 ]] && echo ON || echo OFF)

if ! command -v clang++-19 >/dev/null; then
  echo "fuzz.sh: clang++-19 not found (scripts/setup.sh installs it)" >&2
  exit 2
fi
if [[ ! -f "$dir/build.ninja" ]]; then
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DOSPREY_BUILD_FUZZERS=ON -DOSPREY_BUILD_COMPILER="$compiler" \
    -DOSPREY_BUILD_SAMPLES=OFF ${OSPREY_FUZZ_CMAKE_ARGS:-} >/dev/null
fi

targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in "$dir"/fuzz/*.seeds; do targets+=("$(basename "$f" .seeds)"); done
fi
cmake --build "$dir" -j"${OSPREY_JOBS:-2}" --target "${targets[@]}"

status=0
printf '%-22s %12s %8s %8s %8s  %s\n' target executions exec/s cov ft result
for t in "${targets[@]}"; do
  corpus="$dir/tests/fuzz/corpus/$t"
  artifacts="$dir/fuzz/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  mapfile -t seeds < "$dir/fuzz/$t.seeds"
  log="$dir/fuzz/$t.log"
  set +e
  "$dir/fuzz/$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb="${OSPREY_FUZZ_RSS_MB:-2048}" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" > "$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo ?)
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo ?)
  result=ok
  if ((rc != 0)); then
    result="FOUND A PROBLEM (exit $rc; log $log, inputs in $artifacts)"
    status=1
  fi
  printf '%-22s %12s %8s %8s %8s  %s\n' "$t" "$execs" "$rate" "$cov" "$ft" "$result"
done
exit "$status"
