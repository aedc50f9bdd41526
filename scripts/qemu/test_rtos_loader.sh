#!/usr/bin/env bash
# QEMU test of the FreeRTOS module loader (samples/rtos_loader, ctest label
# qemu): packages the modules the bare-metal model tests compiled for TARGET
# (embedded-elf DS-CNN and ResNet-8 in MODEL_DIR, with their test vectors and
# output digests), makes damaged packages (truncated and flipped on the
# link, truncated and flipped before packaging, compiled for the other CPU),
# cross-builds the loader with the FreeRTOS platform layer into BUILD_DIR
# and runs it: DS-CNN, the five damaged packages, ResNet-8, DS-CNN again.
# With the expected exit code 0 it also checks that every output digest
# equals the bare-metal image's (bit-identical outputs) and that each damaged
# package was refused for its own reason.
#
#   scripts/qemu/test_rtos_loader.sh TARGET BUILD_DIR MODEL_DIR COMPILER
#                                    [--expect-exit N] [ARG...]
#
#   TARGET     cortex-m4 or riscv32 (built as TARGET-freertos)
#   MODEL_DIR  the bare-metal model tests' directory for TARGET
#   COMPILER   path of osprey-compile (for the other CPU's module)
#   ARG        passed to the firmware (e.g. --inject-failure, --runs=2)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if (($# < 4)); then
  echo "usage: test_rtos_loader.sh TARGET BUILD_DIR MODEL_DIR COMPILER [--expect-exit N] [ARG...]" >&2
  exit 2
fi
target="$1"
build_dir="$(mkdir -p "$2" && cd "$2" && pwd)"
model_dir="$(cd "$3" && pwd)"
compiler="$4"
shift 4
expect=0
if (($# >= 2)) && [[ "$1" == --expect-exit ]]; then
  expect="$2"
  shift 2
fi
case "$target" in
  cortex-m4) foreign_cpu=riscv32 ;;
  riscv32) foreign_cpu=armv7em ;;
  *) echo "test_rtos_loader.sh: no FreeRTOS loader for target '$target'" >&2; exit 2 ;;
esac

work="$model_dir/rtos"
mkdir -p "$work"
package=(/usr/bin/python3 "$root/scripts/qemu/make_rtos_package.py")
for model in ds_cnn resnet8; do
  for file in "${model}_elf.osp" "$model.vec" "${model}_elf.digest"; do
    if [[ ! -s "$model_dir/$file" ]]; then
      echo "test_rtos_loader.sh: no $model_dir/$file (made by the bare-metal model test" \
           "qemu_model_${target}_*embedded-elf)" >&2
      exit 1
    fi
  done
  "${package[@]}" "$model_dir/${model}_elf.osp" "$work/$model.pkg"
  cp "$model_dir/$model.vec" "$work/$model.vec"
done
module="$model_dir/ds_cnn_elf.osp"
size=$(stat -c %s "$module")
"${package[@]}" "$module" "$work/transit_truncated.pkg" --truncate-transit $((size / 2))
"${package[@]}" "$module" "$work/transit_flipped.pkg" --flip-transit 100 --flip-transit $((size / 2))
"${package[@]}" "$module" "$work/module_truncated.pkg" --truncate-module $((size * 3 / 4))
# Byte 4 is the low byte of the FlatBuffer's root table offset.
"${package[@]}" "$module" "$work/module_flipped.pkg" --flip-module 4
"$compiler" "$model_dir/ds_cnn.onnx" --target="$foreign_cpu" --output-format=embedded-elf \
  -o "$work/ds_cnn_$foreign_cpu.osp"
"${package[@]}" "$work/ds_cnn_$foreign_cpu.osp" "$work/foreign.pkg"

steps=(model:ds_cnn.pkg:ds_cnn.vec refuse:transit_truncated.pkg refuse:transit_flipped.pkg
       refuse:module_truncated.pkg refuse:module_flipped.pkg refuse:foreign.pkg
       model:resnet8.pkg:resnet8.vec model:ds_cnn.pkg:ds_cnn.vec)
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# Semihosting opens the packages relative to QEMU's working directory.
(cd "$work" && bash "$root/scripts/qemu/test_firmware.sh" "$target-freertos" "$build_dir" \
   --image osprey_rtos_loader --expect-exit "$expect" "${steps[@]}" "$@") 2>&1 | tee "$log"
((expect == 0)) || exit 0

# Outputs bit-identical to bare metal; each refusal for its own reason.
/usr/bin/python3 - "$log" "$(cat "$model_dir/ds_cnn_elf.digest")" \
    "$(cat "$model_dir/resnet8_elf.digest")" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
ds_cnn, resnet8 = sys.argv[2], sys.argv[3]
sections = re.split(r"^\[beat \d+\] ", text, flags=re.M)[1:]
expected = [
    ("model", ds_cnn), ("refuse", r"truncated: received \d+ of \d+ module bytes"),
    ("refuse", r"fails its CRC-32 check"),
    # The whole-file digest is checked first: a truncated module is a
    # digest mismatch before its FlatBuffer is read.
    ("refuse", r"DATA_LOSS: module file is truncated|is outside the \d+-byte file|"
     r"DATA_LOSS: module digest mismatch: the file records [0-9a-f]+ but its \d+ bytes digest"),
    ("refuse", r"DATA_LOSS: module FlatBuffer failed structural verification"),
    ("refuse", r"UNIMPLEMENTED: no device of the session \(1, the first 'cpu-(task|sync)'\) "
     r"can run any of the 1 executable"),
    ("model", resnet8), ("model", ds_cnn)]
failures = []
if len(sections) != len(expected):
  failures.append(f"{len(sections)} steps in the output, expected {len(expected)}")
for i, ((kind, want), section) in enumerate(zip(expected, sections)):
  if kind == "model":
    digests = re.findall(r"output digest (0x[0-9a-f]+)", section)
    if digests != [want]:
      failures.append(f"step {i + 1}: output digest {digests}, bare metal printed {want}")
  elif not re.search(want, section):
    failures.append(f"step {i + 1}: no refusal matching '{want}'")
for failure in failures:
  print(f"test_rtos_loader.sh: {failure}", file=sys.stderr)
if failures:
  sys.exit(1)
print("test_rtos_loader.sh: outputs bit-identical to the bare-metal images; "
      "every damaged package refused for its reason")
PY
