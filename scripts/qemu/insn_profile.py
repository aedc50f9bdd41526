#!/usr/bin/env python3
"""Counts guest instructions from a QEMU exec trace and attributes them.

Reads a trace written by QEMU with one instruction per translation block
(`-singlestep` or `-accel tcg,one-insn-per-tb=on`) and `-d exec,nochain`:
each "Trace" line is one executed instruction, whose guest PC is the second
field inside the brackets. Prints the total and, given the image, the
functions that executed the most instructions.

  insn_profile.py TRACE [--elf ELF --nm NM] [--top N] [--json OUT]

--json writes {"total", "functions": {name: count}, "pcs": {hex pc: count}}
to OUT, so two runs (e.g. --runs 1 and --runs 2 of the model image) can be
subtracted and a function's disassembly annotated with per-instruction counts.
"""
import argparse
import bisect
import collections
import json
import re
import subprocess
import sys

# The guest PC of one "Trace" line (second field in the brackets).
TRACE_PC = re.compile(rb"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/", re.M)


def symbols(elf, nm):
  """Returns sorted (start, end, name) for the image's functions."""
  out = subprocess.run([nm, "-S", "-C", "--defined-only", elf], capture_output=True, text=True,
                       check=True).stdout
  table = []
  for line in out.splitlines():
    parts = line.split(None, 3)
    if len(parts) == 4 and parts[2] in "tTwW":
      start = int(parts[0], 16) & ~1  # Thumb function addresses have bit 0 set.
      table.append((start, start + int(parts[1], 16), parts[3]))
  table.sort()
  return table


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("trace")
  parser.add_argument("--elf")
  parser.add_argument("--nm", default="nm")
  parser.add_argument("--top", type=int, default=12)
  parser.add_argument("--json", help="also write the counts to this file")
  args = parser.parse_args()

  table = symbols(args.elf, args.nm) if args.elf else []
  starts = [s for s, _, _ in table]
  # Traces of a model inference run to gigabytes: they are scanned in large
  # blocks (no Python work per line) and counted by their PC field,
  # converted to a number once per distinct PC.
  by_field = collections.Counter()
  with open(args.trace, "rb") as f:
    rest = b""
    while True:
      block = f.read(1 << 26)
      if not block:
        break
      block = rest + block
      cut = block.rfind(b"\n") + 1
      rest = block[cut:]
      by_field.update(TRACE_PC.findall(block, 0, cut))
    by_field.update(TRACE_PC.findall(rest + b"\n"))
  per_pc = collections.Counter()
  for field, count in by_field.items():
    per_pc[int(field, 16)] += count
  total = sum(per_pc.values())
  print(f"guest instructions executed: {total}")
  per_symbol = collections.Counter()
  for pc, count in per_pc.items():
    i = bisect.bisect_right(starts, pc) - 1
    name = table[i][2] if i >= 0 and pc < table[i][1] else "(outside the image: loaded code)"
    per_symbol[name] += count
  if args.json:
    with open(args.json, "w", encoding="utf-8") as f:
      json.dump({"total": total, "functions": per_symbol,
                 "pcs": {f"{pc:#x}": count for pc, count in sorted(per_pc.items())}}, f)
  if not table or total == 0:
    return
  print(f"functions executing the most instructions (of {len(per_symbol)}):")
  for name, count in per_symbol.most_common(args.top):
    print(f"  {count:>9}  {100.0 * count / total:5.1f}%  {name}")


if __name__ == "__main__":
  sys.exit(main())
