#!/usr/bin/env python3
"""Counts guest instructions from a QEMU exec trace and attributes them.

Reads a trace written by QEMU with one instruction per translation block
(`-singlestep` or `-accel tcg,one-insn-per-tb=on`) and `-d exec,nochain`:
each "Trace" line is one executed instruction, whose guest PC is the second
field inside the brackets. Prints the total and, given the image, the
functions that executed the most instructions.

  insn_profile.py TRACE [--elf ELF --nm NM] [--top N]
"""
import argparse
import bisect
import collections
import re
import subprocess
import sys

TRACE = re.compile(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")


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
  args = parser.parse_args()

  table = symbols(args.elf, args.nm) if args.elf else []
  starts = [s for s, _, _ in table]
  per_pc = collections.Counter()
  total = 0
  with open(args.trace, encoding="utf-8", errors="replace") as f:
    for line in f:
      m = TRACE.match(line)
      if m:
        total += 1
        per_pc[int(m.group(1), 16)] += 1
  print(f"guest instructions executed: {total}")
  if not table or total == 0:
    return
  per_symbol = collections.Counter()
  for pc, count in per_pc.items():
    i = bisect.bisect_right(starts, pc) - 1
    name = table[i][2] if i >= 0 and pc < table[i][1] else "(outside the image: loaded code)"
    per_symbol[name] += count
  print(f"functions executing the most instructions (of {len(per_symbol)}):")
  for name, count in per_symbol.most_common(args.top):
    print(f"  {count:>9}  {100.0 * count / total:5.1f}%  {name}")


if __name__ == "__main__":
  sys.exit(main())
