#!/usr/bin/env bash
# QEMU model test driver (ctest label qemu): exports a model with its input
# and reference output (scripts/qemu/make_model_data.py), compiles it for
# TARGET's CPU with osprey-compile in FORMAT, cross-builds the model image
# (samples/bare_metal/model_main.cc) into BUILD_DIR, runs it on the matching
# QEMU board and checks its exit code. A passing run without extra arguments
# leaves the output's digest in MODEL_DIR/<model>_<elf|static>.digest, and
# the export leaves the test vectors in MODEL_DIR/<model>.vec, for the
# FreeRTOS loader's test (scripts/qemu/test_rtos_loader.sh).
#
# With --npu CONFIG the model is compiled for the CPU and the NPU
# (--accelerator=npu-v1:CONFIG) and runs in the _npu image (cpu-sync and an
# npu device); a passing plain run leaves its digest in
# MODEL_DIR/<model>_<elf|static>_npu.digest and must print the same digest
# as the CPU-only image when that one has left its own (bit-identical
# output).
#
#   scripts/qemu/test_model.sh TARGET BUILD_DIR MODEL_DIR FORMAT COMPILER
#                              [--model NAME] [--heap BYTES] [--npu CONFIG] [--expect-exit N]
#                              [ARG...]
#
#   TARGET     cortex-m4 (armv7em code) or riscv32
#   FORMAT     embedded-elf or static-library
#   COMPILER   path of osprey-compile
#   MODEL_DIR  where the exported model and the compiled files go
#   --model NAME     model of scripts/models/export_models.py (default ds_cnn)
#   --heap BYTES     the image's runtime arena (default 262144)
#   --npu CONFIG     NPU configuration to compile for (e.g. pes=64,sram=256KiB,wmem=64KiB)
#   --expect-exit N  pass only if the image exits with N (default 0)
#   ARG              passed to the image's main() (e.g. --inject-failure)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if (($# < 5)); then
  echo "usage: test_model.sh TARGET BUILD_DIR MODEL_DIR FORMAT COMPILER [--model NAME]" \
       "[--heap BYTES] [--expect-exit N] [ARG...]" >&2
  exit 2
fi
target="$1"
build_dir="$2"
model_dir="$3"
format="$4"
compiler="$5"
shift 5
model=ds_cnn
heap=262144
expect=0
npu=""
while (($# >= 2)); do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --heap) heap="$2"; shift 2 ;;
    --npu) npu="$2"; shift 2 ;;
    --expect-exit) expect="$2"; shift 2 ;;
    *) break ;;
  esac
done
case "$target" in
  cortex-m4) cpu=armv7em ;;
  riscv32) cpu=riscv32 ;;
  *) echo "test_model.sh: no model image for target '$target'" >&2; exit 2 ;;
esac
case "$format" in
  embedded-elf) suffix=elf ;;
  static-library) suffix=static ;;
  *) echo "test_model.sh: unknown format '$format'" >&2; exit 2 ;;
esac

cpu_digest_file="$model_dir/${model}_$suffix.digest"
compile_args=()
if [[ -n "$npu" ]]; then
  suffix="${suffix}_npu"
  compile_args=(--accelerator="npu-v1:$npu")
fi

mkdir -p "$model_dir"
/usr/bin/python3 "$root/scripts/qemu/make_model_data.py" --out "$model_dir" --model "$model" \
  --vectors "$model_dir/$model.vec"
"$compiler" "$model_dir/$model.onnx" --target="$cpu" --output-format="$format" \
  "${compile_args[@]}" -o "$model_dir/${model}_$suffix.osp"
echo "test_model.sh: compiled $model for $cpu as $format ${compile_args[*]}"

digest_file="$model_dir/${model}_$suffix.digest"
plain_run=0
((expect == 0 && $# == 0)) && plain_run=1
((plain_run)) && rm -f "$digest_file"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
bash "$root/scripts/qemu/test_firmware.sh" "$target" "$build_dir" \
  --image "osprey_bare_metal_model_$suffix" \
  --cmake-arg "-DOSPREY_MODEL_DIR=$model_dir" --cmake-arg "-DOSPREY_MODEL_NAME=$model" \
  --cmake-arg "-DOSPREY_MODEL_HEAP_SIZE=$heap" \
  --expect-exit "$expect" "$@" 2>&1 | tee "$log"
if ((plain_run)); then
  grep -o "output digest 0x[0-9a-f]*" "$log" | awk '{print $3}' > "$digest_file"
  [[ -s "$digest_file" ]] || { echo "test_model.sh: the image printed no output digest" >&2; exit 1; }
  if [[ -n "$npu" ]]; then
    if [[ -s "$cpu_digest_file" ]]; then
      if [[ "$(cat "$digest_file")" != "$(cat "$cpu_digest_file")" ]]; then
        echo "test_model.sh: output digest $(cat "$digest_file") differs from the CPU-only" \
             "image's $(cat "$cpu_digest_file")" >&2
        exit 1
      fi
      echo "test_model.sh: output bit-identical to the CPU-only image ($(cat "$digest_file"))"
    else
      echo "test_model.sh: no CPU-only digest ($cpu_digest_file) to compare with"
    fi
  fi
fi
