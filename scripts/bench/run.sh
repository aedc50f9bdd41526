#!/usr/bin/env bash
# Benchmarks Osprey against ONNX Runtime on this machine: installs
# onnxruntime-node into a cache under the build directory on first use, then
# runs bench.py, which exports the models (scripts/models/export_models.py,
# cached) and prints tables of compile time, latency (median of timed runs after
# warm-up), process CPU time per call and peak RSS for Osprey (cpu-sync,
# cpu-task with 1 and 2 workers) and ONNX Runtime (1 and 2 intra-op threads).
#
#   OSPREY_BUILD_DIR     build with osprey-compile/-benchmark (default: build)
#   OSPREY_BENCH_MODELS  comma-separated models or groups (reference, tiny,
#                        default, all; default: default = the reference set
#                        mobilenet_v2, resnet18, efficientnet_b0, bert_mini,
#                        then MLPerf Tiny)
#   OSPREY_BENCH_RUNS    timed runs per configuration (default: 25)
#   OSPREY_BENCH_ROUNDS  times each configuration is measured, taking turns
#                        with the others, so speed drift of the machine hits
#                        Osprey and ONNX Runtime alike (default: 3)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build_dir="${OSPREY_BUILD_DIR:-$root/build}"
models="${OSPREY_BENCH_MODELS:-default}"
runs="${OSPREY_BENCH_RUNS:-25}"
rounds="${OSPREY_BENCH_ROUNDS:-3}"
cache="$build_dir/bench"
ort_version=1.30.0

for tool in osprey-compile osprey-benchmark; do
  if [[ ! -x "$build_dir/bin/$tool" ]]; then
    echo "run.sh: $build_dir/bin/$tool not found (configure with -DOSPREY_BUILD_COMPILER=ON" \
         "and build osprey-compile osprey-benchmark)" >&2
    exit 1
  fi
done

mkdir -p "$cache/models" "$cache/ort"

# The package ships its CPU binaries; its install script only fetches optional
# GPU providers from the network, so it is skipped.
if [[ ! -f "$cache/ort/node_modules/onnxruntime-node/package.json" ]] ||
   ! grep -q "\"version\": \"$ort_version\"" \
     "$cache/ort/node_modules/onnxruntime-node/package.json"; then
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$cache/ort" \
    "onnxruntime-node@$ort_version"
fi

echo "uptime: $(uptime)"
/usr/bin/python3 "$root/scripts/bench/bench.py" --build "$build_dir" --export \
  --models-dir "$cache/models" --ort-dir "$cache/ort" --models "$models" --runs "$runs" \
  --rounds "$rounds" --json "$cache/results.json"
