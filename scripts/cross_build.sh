#!/usr/bin/env bash
# Cross-builds the runtime libraries, the check firmware (tests/qemu/firmware)
# and the bare-metal sample images (samples/bare_metal) for the bare-metal
# targets, then prints each image's size and what the Osprey runtime
# libraries contribute to it, per library and per component
# (scripts/qemu/size_report.py). On cortex-m4 (the size
# profile) the model runner's runtime share is checked against a budget.
# Incremental: a configured build directory is only rebuilt.
#
#   scripts/cross_build.sh [--run] [TARGET...]
#
#   TARGET     cortex-m4 (the size profile: MinSizeRel, OSPREY_SIZE_PROFILE),
#              riscv32 (MinSizeRel, status messages on), cortex-m55,
#              cortex-m4-freertos and riscv32-freertos (the FreeRTOS
#              platform layer and samples/rtos_loader; status messages on).
#              Default: $OSPREY_CROSS_TARGETS or "cortex-m4 riscv32".
#   --run      also run each firmware under QEMU (scripts/qemu/run_firmware.sh)
#
#   OSPREY_CROSS_BUILD_PREFIX   build directories are <prefix><target>
#                               (default: <repo>/build-)
#   OSPREY_CORTEX_M4_BUILD_DIR  build directory for cortex-m4 (overrides the prefix;
#                               likewise OSPREY_RISCV32_BUILD_DIR, OSPREY_CORTEX_M55_BUILD_DIR)
#   OSPREY_CROSS_CMAKE_ARGS     extra cmake arguments for every target (applied
#                               to an existing build directory too)
#   OSPREY_CROSS_BUILD_TARGETS  CMake targets to build, for every TARGET ("all":
#                               every runtime library, driver and the firmware).
#                               Default: all on Arm; on riscv32 the firmware and
#                               the libraries it links; on the FreeRTOS targets
#                               the loader and the platform checks images
#   OSPREY_JOBS                 parallel jobs (default 2)
#   OSPREY_CORTEX_M4_SIZE_BUDGET  fail if the runtime libraries' text+data in the
#                               cortex-m4 model runner (VM with the verifier,
#                               HAL module, HAL, cpu-sync, static and ELF
#                               loaders) exceeds this (default 57000 bytes;
#                               0 disables)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${OSPREY_CROSS_BUILD_PREFIX:-$root/build-}"
jobs="${OSPREY_JOBS:-2}"

run=0
targets=()
for arg in "$@"; do
  case "$arg" in
    --run) run=1 ;;
    -h|--help) sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "cross_build.sh: unknown option '$arg'" >&2; exit 2 ;;
    *) targets+=("$arg") ;;
  esac
done
if ((${#targets[@]} == 0)); then
  read -r -a targets <<< "${OSPREY_CROSS_TARGETS:-cortex-m4 riscv32}"
fi

# Prints the build directory of target $1.
build_dir_of() {
  local var="OSPREY_$(echo "$1" | tr 'a-z-' 'A-Z_')_BUILD_DIR"
  echo "${!var:-$prefix$1}"
}

build_target() {
  local target="$1"
  local dir toolchain tool_prefix
  dir="$(build_dir_of "$target")"
  local args=(-DCMAKE_BUILD_TYPE=MinSizeRel)
  case "$target" in
    cortex-m4)
      toolchain=cortex-m4; tool_prefix=arm-none-eabi-
      args+=(-DOSPREY_SIZE_PROFILE=ON) ;;
    cortex-m55)
      toolchain=cortex-m55; tool_prefix=arm-none-eabi- ;;
    riscv32)
      toolchain=riscv32; tool_prefix=riscv64-unknown-elf- ;;
    cortex-m4-freertos)
      toolchain=cortex-m4; tool_prefix=arm-none-eabi-
      args+=(-DOSPREY_PLATFORM=freertos -DOSPREY_HAL_DRIVER_NPU=OFF) ;;
    riscv32-freertos)
      # virt has 128 MiB of RAM: 6 MiB for the 2 MiB FreeRTOS heap and more.
      toolchain=riscv32; tool_prefix=riscv64-unknown-elf-
      args+=(-DOSPREY_PLATFORM=freertos -DOSPREY_HAL_DRIVER_NPU=OFF
             -DOSPREY_BOARD_RAM_SIZE=0x00600000) ;;
    *)
      echo "cross_build.sh: unknown target '$target' (cortex-m4, cortex-m55, riscv32," \
           "cortex-m4-freertos, riscv32-freertos)" >&2
      return 2 ;;
  esac

  echo "=== cross build: $target in $dir"
  # Configured on every run, so a build folder made by an older version of
  # this script gets the current options (cmake only redoes what changed).
  mkdir -p "$dir"
  cmake -S "$root" -B "$dir" -G Ninja \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/$toolchain.cmake" \
    "${args[@]}" ${OSPREY_CROSS_CMAKE_ARGS:-} > "$dir/configure.log" 2>&1 || {
      cat "$dir/configure.log" >&2
      echo "cross_build.sh: configuring $target FAILED" >&2
      return 1
    }
  local what="${OSPREY_CROSS_BUILD_TARGETS:-}"
  if [[ -z "$what" ]]; then
    what=all
    [[ "$target" == riscv32 ]] && what=osprey_bare_metal_firmware
    [[ "$target" == *-freertos ]] && what="osprey_rtos_loader osprey_rtos_platform_checks"
  fi
  local build_targets=()
  read -r -a build_targets <<< "$what"
  build_targets=(--target "${build_targets[@]}")
  echo "building: $what"
  # The compiler output goes to build.log and is shown in full on failure.
  if ! cmake --build "$dir" -j"$jobs" "${build_targets[@]}" > "$dir/build.log" 2>&1; then
    cat "$dir/build.log" >&2
    echo "cross_build.sh: building $target FAILED (log: $dir/build.log)" >&2
    return 1
  fi
  local warnings
  warnings="$(grep -c 'warning:' "$dir/build.log" || true)"
  echo "built; $warnings compiler warnings (log: $dir/build.log)"
  if ((warnings > 0)); then
    grep 'warning:' "$dir/build.log" | sed "s|^$root/||; s|^.*/cmake/\.\./||" | sort | uniq -c |
      sort -rn | head -5
  fi

  # Size of each image this run built: the firmware (checked against the
  # budget), the embedding-API image when the tree has it, and the model
  # images when the build was given a model (OSPREY_MODEL_DIR).
  local image elf budget
  for image in osprey_bare_metal_firmware osprey_bare_metal_embed \
      osprey_bare_metal_model_runner osprey_bare_metal_model_elf osprey_bare_metal_model_static \
      osprey_bare_metal_model_elf_npu osprey_bare_metal_model_static_npu \
      osprey_rtos_platform_checks osprey_rtos_loader; do
    elf="$dir/bin/$image.elf"
    [[ -f "$elf" ]] || continue
    [[ " $what " == *" all "* || " $what " == *" $image "* ]] || continue
    echo "--- $image"
    "${tool_prefix}size" "$elf"
    budget=0
    if [[ "$target" == cortex-m4 && "$image" == osprey_bare_metal_model_runner ]]; then
      budget="${OSPREY_CORTEX_M4_SIZE_BUDGET:-57000}"
    fi
    if ! python3 "$root/scripts/qemu/size_report.py" "$elf.map" --top 10 \
        --cxxfilt "${tool_prefix}c++filt" --budget "$budget"; then
      echo "cross_build.sh: $target $image runtime size over budget" >&2
      return 1
    fi
  done
  if ((run)); then
    local run_image=osprey_bare_metal_firmware
    [[ "$target" == *-freertos ]] && run_image=osprey_rtos_platform_checks
    bash "$root/scripts/qemu/run_firmware.sh" "$target" "$dir/bin/$run_image.elf"
  fi
}

status=0
for target in "${targets[@]}"; do
  build_target "$target" || status=1
done
if ((status != 0)); then
  echo "cross_build.sh: FAILED" >&2
fi
exit "$status"
