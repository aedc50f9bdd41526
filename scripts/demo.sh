#!/usr/bin/env bash
# The main job: compile an ONNX model with osprey-compile and run it with
# osprey-run on the synchronous CPU device, checking the outputs against the
# reference computed by numpy when the model was generated.
#
#   OSPREY_DEMO_MODEL   one of the generated models (default: conv_net)
#   OSPREY_DEMO_DEVICE  cpu-sync | cpu-task (default: cpu-sync)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${OSPREY_BUILD_DIR:-$root/build}"
model="${OSPREY_DEMO_MODEL:-conv_net}"
device="${OSPREY_DEMO_DEVICE:-cpu-sync}"
models="$build_dir/demo"

mkdir -p "$models"
/usr/bin/python3 "$root/scripts/models/make_e2e_models.py" --out "$models" >/dev/null

echo "== osprey-compile $model.onnx"
"$build_dir/bin/osprey-compile" "$models/$model.onnx" --target=host -o "$models/$model.osp"
ls -l "$models/$model.osp"

args=(--module="$models/$model.osp" --device="$device" --function=main --tolerance=1e-4)
for f in "$models/$model".in*.npy; do args+=(--input=@"$f"); done
for f in "$models/$model".ref*.npy; do args+=(--expected_output=@"$f"); done

echo "== osprey-run on $device"
"$build_dir/bin/osprey-run" "${args[@]}" --output=@"$models/$model.out0.npy"
echo "== outputs match the numpy reference (tolerance 1e-4)"
