#!/usr/bin/env python3
"""Attributes a bare-metal image's bytes to the libraries that supplied them.

Reads the GNU ld map file written next to the firmware (-Map=<elf>.map) and
prints, per input file group (each libosprey_*.a, the firmware's own objects,
libc, libgcc, ...), the bytes it contributes to text (code and read-only
data), data (initialized RAM, also stored in flash) and bss. Then lists the
largest input sections that come from Osprey libraries, demangled.

  size_report.py <map> [--top N] [--cxxfilt TOOL] [--budget BYTES]

With --budget, exits with status 1 if the Osprey libraries' text+data
exceeds BYTES.
"""
import argparse
import collections
import re
import subprocess
import sys

BSS_SECTIONS = {".bss", ".tbss", ".noinit", ".sbss", ".tbss_space"}
DATA_SECTIONS = {".data", ".tdata", ".sdata"}
# Output sections that are not part of the image.
SKIPPED = re.compile(r"^\.(debug|comment|stab|ARM\.attributes|riscv\.attributes|"
                     r"gnu\.build|line|note|group|stack|heap|tbss_space)")
INPUT_LINE = re.compile(
    r"^ (?P<name>\S+)?\s+0x(?P<addr>[0-9a-fA-F]+)\s+0x(?P<size>[0-9a-fA-F]+)\s+(?P<file>\S.*)$")
OUTPUT_LINE = re.compile(r"^(?P<name>\.\S+)(\s+0x[0-9a-fA-F]+\s+0x[0-9a-fA-F]+.*)?$")


def component(path):
  """Names the group an input file belongs to."""
  m = re.search(r"([^/]+\.a)\(", path)
  if m:
    return m.group(1)
  if "/CMakeFiles/" in path or path.startswith("CMakeFiles/"):
    return "application objects"
  base = path.rsplit("/", 1)[-1]
  if base.startswith("crt"):
    return "crt0/crtbegin/crtend"
  return base


def parse(map_path):
  """Yields (output_section, input_section, size, file) for image bytes."""
  with open(map_path, encoding="utf-8", errors="replace") as f:
    lines = f.read().splitlines()
  try:
    start = lines.index("Linker script and memory map")
  except ValueError:
    sys.exit(f"{map_path}: no memory map found")
  out_section = None
  pending_name = None
  for line in lines[start + 1:]:
    m = OUTPUT_LINE.match(line)
    if m:
      out_section = m.group("name")
      pending_name = None
      continue
    if out_section is None or SKIPPED.match(out_section):
      continue
    m = INPUT_LINE.match(line)
    if m:
      name = m.group("name") or pending_name
      pending_name = None
      size = int(m.group("size"), 16)
      if size and name and not name.startswith("*"):
        yield out_section, name, size, m.group("file").strip()
      continue
    stripped = line.strip()
    # A long input section name sits alone on its line; its numbers follow.
    if line.startswith(" ") and stripped and " " not in stripped and stripped.startswith("."):
      pending_name = stripped
    elif stripped.startswith("*fill*"):
      pending_name = None


def kind(out_section):
  if out_section in BSS_SECTIONS:
    return "bss"
  if out_section in DATA_SECTIONS:
    return "data"
  return "text"


def demangle(names, tool):
  try:
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    if len(out) == len(names):
      return out
  except (OSError, subprocess.CalledProcessError):
    pass
  return names


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("map")
  parser.add_argument("--top", type=int, default=15)
  parser.add_argument("--cxxfilt", default="c++filt")
  parser.add_argument("--budget", type=int, default=0,
                      help="fail if the runtime's text+data exceeds this many bytes")
  args = parser.parse_args()

  totals = collections.defaultdict(lambda: collections.Counter())
  osprey_sections = []
  for out_section, name, size, path in parse(args.map):
    group = component(path)
    totals[group][kind(out_section)] += size
    if group.startswith("libosprey_") and kind(out_section) != "bss":
      osprey_sections.append((size, name, group))

  def row(label, c):
    return f"  {label:<38} {c['text']:>8} {c['data']:>6} {c['bss']:>8}"

  print(f"  {'component':<38} {'text':>8} {'data':>6} {'bss':>8}")
  osprey = collections.Counter()
  everything = collections.Counter()
  for group in sorted(totals, key=lambda g: -(totals[g]["text"] + totals[g]["data"])):
    print(row(group, totals[group]))
    everything.update(totals[group])
    if group.startswith("libosprey_"):
      osprey.update(totals[group])
  print(row("total", everything))
  print(row("osprey runtime libraries", osprey))
  print(f"osprey runtime code size (text+data): {osprey['text'] + osprey['data']} bytes")
  strings = sum(size for size, name, _ in osprey_sections if re.search(r"\.str\d", name))
  print(f"  of which string literals (messages, names): {strings} bytes")
  runtime_bytes = osprey["text"] + osprey["data"]
  over_budget = args.budget > 0 and runtime_bytes > args.budget
  if args.budget > 0:
    print(f"size budget: {runtime_bytes} of {args.budget} bytes"
          f"{' -- OVER BUDGET' if over_budget else ''}")

  if args.top > 0 and osprey_sections:
    osprey_sections.sort(reverse=True)
    top = osprey_sections[:args.top]
    # -ffunction-sections names each section after its symbol.
    prefix = re.compile(r"^\.(text|rodata|data|data\.rel\.ro|sdata|srodata)"
                        r"(\.unlikely|\.hot|\.startup)?\.(?=_Z|[A-Za-z_])")
    symbols = []
    for _, name, _ in top:
      symbol = prefix.sub("", name)
      # Merged string/constant pools keep their section name.
      symbols.append(name if re.match(r"^(str|cst)\d", symbol) else symbol)
    pretty = demangle(symbols, args.cxxfilt)
    print(f"largest osprey sections (of {len(osprey_sections)}):")
    for (size, name, group), symbol in zip(top, pretty):
      print(f"  {size:>6}  {group:<22} {symbol}")
  return 1 if over_budget else 0


if __name__ == "__main__":
  sys.exit(main())
