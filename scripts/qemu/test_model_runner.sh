#!/usr/bin/env bash
# QEMU test of the bare-metal model runner (osprey_bare_metal_model_runner,
# ctest label qemu): the image of the size profile, which reads the module
# and its test vectors from files at run time. Runs the embedded-ELF DS-CNN
# and ResNet-8 modules the bare-metal model tests left in MODEL_DIR and
# checks that each output digest equals the one the image with the module
# compiled in printed (the same module file, bit-identical outputs).
#
#   scripts/qemu/test_model_runner.sh TARGET BUILD_DIR MODEL_DIR
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if (($# != 3)); then
  echo "usage: test_model_runner.sh TARGET BUILD_DIR MODEL_DIR" >&2
  exit 2
fi
target="$1"
build_dir="$(mkdir -p "$2" && cd "$2" && pwd)"
model_dir="$(cd "$3" && pwd)"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for model in ds_cnn resnet8; do
  for file in "${model}_elf.osp" "$model.vec" "${model}_elf.digest"; do
    if [[ ! -s "$model_dir/$file" ]]; then
      echo "test_model_runner.sh: no $model_dir/$file (made by the bare-metal model tests)" >&2
      exit 1
    fi
  done
  # Semihosting opens the files relative to QEMU's working directory.
  (cd "$model_dir" && bash "$root/scripts/qemu/test_firmware.sh" "$target" "$build_dir" \
     --image osprey_bare_metal_model_runner --module "${model}_elf.osp" --vectors "$model.vec") \
    2>&1 | tee "$log"
  want="$(cat "$model_dir/${model}_elf.digest")"
  got="$(grep -o "output digest 0x[0-9a-f]*" "$log" | awk '{print $3}')"
  if [[ "$got" != "$want" ]]; then
    echo "test_model_runner.sh: $model output digest '$got', the embedded image printed '$want'" >&2
    exit 1
  fi
  echo "test_model_runner.sh: $model output bit-identical to the embedded image's"
done
