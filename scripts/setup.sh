#!/usr/bin/env bash
# Installs every Debian package Osprey needs, then configures and builds the
# host tree into build/. Idempotent and non-interactive; run as root (or with
# sudo available) on Debian 12.
#
#   OSPREY_BUILD_DIR   build directory (default: build)
#   OSPREY_SKIP_APT=1  skip package installation
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${OSPREY_BUILD_DIR:-$root/build}"

packages=(
  # Host build.
  build-essential cmake ninja-build git pkg-config
  # LLVM 19: clang/lld for building executables, LLVM + lld libraries for
  # the compiler, FileCheck/lit for compiler tests.
  clang-19 lld-19 llvm-19-dev llvm-19-tools liblld-19-dev libc++-19-dev
  # libFuzzer and the sanitizer runtimes for clang-19 (scripts/fuzz.sh).
  libclang-rt-19-dev
  libzstd-dev zlib1g-dev libedit-dev libxml2-dev libcurl4-openssl-dev
  # Libraries.
  libflatbuffers-dev flatbuffers-compiler libmimalloc-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  # Model and test-data scripts (run with /usr/bin/python3).
  python3 python3-numpy python3-onnx
  # Real-model tests export torchvision architectures (fixed random weights).
  python3-torch python3-torchvision
  # Bare-metal cross builds and emulation.
  gcc-arm-none-eabi picolibc-arm-none-eabi libstdc++-arm-none-eabi-picolibc
  gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf
  qemu-system-arm qemu-system-misc
  # The compile report (osprey-compile --report) is checked in a headless browser.
  chromium
)

if [[ "${OSPREY_SKIP_APT:-0}" != "1" ]]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Node.js and npm: ONNX Runtime (onnxruntime-node) is the reference of the benchmark and the
  # real-model tests, whose models come from npm packages. A Node.js installed otherwise (with its
  # own npm) is kept.
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    missing+=(nodejs npm)
  fi
  if ((${#missing[@]})); then
    sudo_cmd=()
    [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ ${OSPREY_CMAKE_ARGS:-}
cmake --build "$build_dir" -j"${OSPREY_JOBS:-2}"
