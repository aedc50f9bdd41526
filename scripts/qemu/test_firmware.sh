#!/usr/bin/env bash
# QEMU test driver (ctest label qemu): cross-builds the bare-metal firmware
# for TARGET into BUILD_DIR (incrementally), runs it on the matching QEMU
# board and checks its exit code.
#
#   scripts/qemu/test_firmware.sh TARGET BUILD_DIR [--image NAME] [--cmake-arg ARG] [--expect-exit N] [ARG...]
#
#   --image NAME     the image target to build and run
#                    (default osprey_bare_metal_firmware)
#   --expect-exit N  pass only if the firmware exits with N (default 0)
#   --cmake-arg ARG  extra cmake argument for the cross build (repeatable)
#   ARG              passed to the firmware's main()
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if (($# < 2)); then
  echo "usage: test_firmware.sh TARGET BUILD_DIR [--image NAME] [--cmake-arg ARG] [--expect-exit N] [ARG...]" >&2
  exit 2
fi
target="$1"
build_dir="$2"
shift 2
expect=0
image=osprey_bare_metal_firmware
cmake_args=()
while (($# >= 2)); do
  case "$1" in
    --image) image="$2"; shift 2 ;;
    --cmake-arg) cmake_args+=("$2"); shift 2 ;;
    --expect-exit) expect="$2"; shift 2 ;;
    *) break ;;
  esac
done

mkdir -p "$build_dir"
var="OSPREY_$(echo "$target" | tr 'a-z-' 'A-Z_')_BUILD_DIR"
export "$var=$build_dir"
OSPREY_CROSS_CMAKE_ARGS="${cmake_args[*]}" OSPREY_CROSS_BUILD_TARGETS="$image" \
  bash "$root/scripts/cross_build.sh" "$target" > "$build_dir/cross_build.log" 2>&1 || {
    cat "$build_dir/cross_build.log" >&2
    echo "test_firmware.sh: cross build for $target FAILED" >&2
    exit 1
  }

set +e
bash "$root/scripts/qemu/run_firmware.sh" "$target" "$build_dir/bin/$image.elf" "$@"
rc=$?
set -e
if ((rc != expect)); then
  echo "test_firmware.sh: $target $image exited with $rc, expected $expect" >&2
  exit 1
fi
echo "test_firmware.sh: $target $image exited with $rc as expected"
