#!/usr/bin/env bash
# Measures what FreeRTOS costs a model: guest instructions per inference on
# the bare-metal model runner (samples/bare_metal, OSPREY_PLATFORM=none)
# against the FreeRTOS loader (samples/rtos_loader) on cpu-sync and on
# cpu-task, and the instructions to load a module on the FreeRTOS image.
# Counts come from traced QEMU runs (OSPREY_QEMU_COUNT_INSNS) with -icount
# shift 5 (OSPREY_QEMU_ICOUNT: every instruction advances guest time by
# 32 ns, about 31 MHz at one instruction per cycle, so the 1 kHz tick comes
# every ~31,000 instructions, as on a 25-30 MHz Cortex-M4); the wall time
# printed is that guest time. Each figure is the difference of two runs
# (--runs 2 minus --runs 1, --loads 1 minus none). "load (verify+link)"
# is one more load and unload of the received module (verification,
# digests, linking, loading the ELF executables); "load + prepare" is such
# a round that also calls main once, less one inference: loading plus what
# the first call prepares. A traced DS-CNN run takes minutes; ResNet-8
# writes about 5 GB to /tmp and takes far longer.
#
#   scripts/qemu/compare_rtos.sh TARGET RUNNER_ELF LOADER_ELF MODEL_DIR [MODEL...]
#
#   TARGET      cortex-m4 or riscv32
#   RUNNER_ELF  osprey_bare_metal_model_runner.elf (build both images with the
#               same options, e.g. OSPREY_SIZE_PROFILE=ON)
#   LOADER_ELF  osprey_rtos_loader.elf
#   MODEL_DIR   holds <model>_elf.osp and <model>.vec (the bare-metal model
#               tests leave them in build/cross/<board>-models)
#   MODEL       default: ds_cnn resnet8
#
#   OSPREY_RTOS_HEARTBEAT_TICKS  the loader's application task beats every
#               this many ticks (default 1, the loader's default: a switch to
#               the application task and back on every 1 kHz tick, on top of
#               the tick interrupt; 100 leaves mostly the kernel's own cost;
#               a step must last at least this many ticks or the loader
#               reports the heartbeat stalled)
#   OSPREY_RTOS_COMPARE_LOAD=0   skip the module load measurement
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if (($# < 4)); then
  sed -n '2,34p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
target="$1"
runner="$(realpath "$2")"
loader="$(realpath "$3")"
model_dir="$(cd "$4" && pwd)"
shift 4
models=("$@")
((${#models[@]})) || models=(ds_cnn resnet8)
beat="--heartbeat-ticks=${OSPREY_RTOS_HEARTBEAT_TICKS:-1}"

# Prints the instructions one run executed; fails if the image failed.
count() {
  local out rc
  set +e
  out=$(cd "$model_dir" && OSPREY_QEMU_COUNT_INSNS=1 OSPREY_QEMU_ICOUNT=5 \
        OSPREY_QEMU_TIMEOUT=3600 OSPREY_QEMU_PROFILE_TOP=0 \
        bash "$root/scripts/qemu/run_firmware.sh" "$target" "$@" 2>&1)
  rc=$?
  set -e
  if ((rc != 0)); then
    echo "$out" >&2
    echo "compare_rtos.sh: run failed (exit code $rc): $*" >&2
    exit 1
  fi
  echo "$out" | grep -o "guest instructions executed: [0-9]*" | awk '{print $4}'
}

# Prints a result row: model, image, instructions, guest milliseconds, note.
row() {
  printf "%-8s %-28s %12d %10s  %s\n" "$1" "$2" "$3" "$(awk "BEGIN { printf \"%.2f\", $3 * 32e-6 }")" \
    "${4:-}"
}

printf "%-8s %-28s %12s %10s\n" model image "instructions" "ms"
for model in "${models[@]}"; do
  python3 "$root/scripts/qemu/make_rtos_package.py" "$model_dir/${model}_elf.osp" \
    "$model_dir/$model.pkg"
  vectors=(--module "${model}_elf.osp" --vectors "$model.vec")
  bare=$(( $(count "$runner" "${vectors[@]}" --runs 2) - $(count "$runner" "${vectors[@]}" --runs 1) ))
  row "$model" "bare metal, cpu-sync" "$bare"
  for device in cpu-sync cpu-task; do
    step="model:$model.pkg:$model.vec"
    one=$(count "$loader" "$beat" --device=$device --runs=1 "$step")
    two=$(count "$loader" "$beat" --device=$device --runs=2 "$step")
    rtos=$((two - one))
    row "$model" "FreeRTOS, $device" "$rtos" \
      "$(python3 -c "print(f'{100 * ($rtos - $bare) / $bare:+.2f}% vs bare metal')")"
    if [[ "$device" == cpu-sync && "${OSPREY_RTOS_COMPARE_LOAD:-1}" != 0 ]]; then
      load=$(( $(count "$loader" "$beat" --device=cpu-sync --runs=1 --loads=1 "$step") - one ))
      first=$(( $(count "$loader" "$beat" --device=cpu-sync --runs=1 --loads=1 --loads-call \
                   "$step") - one ))
      row "$model" "FreeRTOS load (verify+link)" "$load"
      row "$model" "FreeRTOS load + prepare" "$((first - rtos))"
    fi
  done
done
