#!/usr/bin/env bash
# Runs a bare-metal image on the QEMU board that matches its toolchain and
# exits with the image's own exit code (passed back through semihosting).
#
#   scripts/qemu/run_firmware.sh TARGET ELF [ARG...]
#
#   TARGET  cortex-m4 (mps2-an386), cortex-m55 (mps3-an547), riscv32 (virt);
#           cortex-m4-freertos and riscv32-freertos run on the same boards
#   ARG     passed to the image's main() as its command line
#
#   OSPREY_QEMU_TIMEOUT  seconds before the run counts as hung (default 60)
#   OSPREY_QEMU_COUNT_INSNS=1  also print the number of guest instructions
#                        executed and the functions that executed the most
#                        (scripts/qemu/insn_profile.py; slower, and the trace
#                        takes ~75 bytes of /tmp per instruction)
#   OSPREY_QEMU_PROFILE_JSON=FILE  with COUNT_INSNS, also write the counts per
#                        function and per instruction address to FILE
#   OSPREY_QEMU_ICOUNT=SHIFT  run with -icount shift=SHIFT,sleep=off: guest time
#                        advances 2^SHIFT ns per instruction instead of with the
#                        host clock, so timer interrupts (an RTOS tick) come
#                        after the same instructions however fast the host or
#                        the tracing runs (5: about 31 MHz, like a Cortex-M4)
set -euo pipefail

if (($# < 2)); then
  echo "usage: run_firmware.sh TARGET ELF [ARG...]" >&2
  exit 2
fi
target="$1"
elf="$2"
shift 2

case "$target" in
  cortex-m4|cortex-m4-freertos) qemu=(qemu-system-arm -M mps2-an386 -cpu cortex-m4) ;;
  cortex-m55) qemu=(qemu-system-arm -M mps3-an547) ;;
  riscv32|riscv32-freertos) qemu=(qemu-system-riscv32 -M virt -bios none) ;;
  *) echo "run_firmware.sh: unknown target '$target'" >&2; exit 2 ;;
esac
if [[ ! -f "$elf" ]]; then
  echo "run_firmware.sh: no image at $elf" >&2
  exit 2
fi

semihosting="enable=on,target=native"
if (($# > 0)); then
  # Semihosting hands these to the image as its command line (picolibc's
  # crt0 supplies argv[0] itself). Arguments may not contain commas.
  for a in "$@"; do semihosting+=",arg=$a"; done
fi
qemu+=(-nographic -monitor none -semihosting-config "$semihosting" -kernel "$elf")
if [[ -n "${OSPREY_QEMU_ICOUNT:-}" ]]; then
  qemu+=(-icount "shift=$OSPREY_QEMU_ICOUNT,sleep=off")
fi

timeout_s="${OSPREY_QEMU_TIMEOUT:-60}"
if [[ "${OSPREY_QEMU_COUNT_INSNS:-0}" == "1" ]]; then
  # One instruction per translation block, so each exec trace line is one
  # executed instruction (the option was renamed in QEMU 8.1).
  if "${qemu[0]}" -accel help 2>&1 | grep -q tcg && "${qemu[0]}" -help | grep -q one-insn-per-tb; then
    single=(-accel tcg,one-insn-per-tb=on)
  else
    single=(-singlestep)
  fi
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  set +e
  timeout "$timeout_s" "${qemu[@]}" "${single[@]}" -d exec,nochain -D "$log"
  rc=$?
  set -e
  case "$target" in
    riscv32*) nm=riscv64-unknown-elf-nm ;;
    *) nm=arm-none-eabi-nm ;;
  esac
  json=()
  if [[ -n "${OSPREY_QEMU_PROFILE_JSON:-}" ]]; then
    json=(--json "$OSPREY_QEMU_PROFILE_JSON")
  fi
  python3 "$(dirname "${BASH_SOURCE[0]}")/insn_profile.py" "$log" --elf "$elf" --nm "$nm" \
    --top "${OSPREY_QEMU_PROFILE_TOP:-12}" "${json[@]}"
else
  set +e
  timeout "$timeout_s" "${qemu[@]}"
  rc=$?
  set -e
fi
if ((rc == 124)); then
  echo "run_firmware.sh: $target image timed out after ${timeout_s}s" >&2
fi
exit "$rc"
