#!/usr/bin/env python3
"""Attributes a bare-metal image's bytes to the libraries that supplied them.

Reads the GNU ld map file written next to the firmware (-Map=<elf>.map) and
prints, per input file group (each libosprey_*.a, the firmware's own objects,
libc, libgcc, ...), the bytes it contributes to text (code and read-only
data), data (initialized RAM, also stored in flash) and bss. Then lists the
largest input sections that come from Osprey libraries, demangled.

  size_report.py <map> [--top N] [--cxxfilt TOOL] [--budget BYTES]

After the table per library it prints the Osprey runtime per component
(the VM's interpreter apart from its loader and bytecode verifier, the
static loader and the executable library ABI apart from the rest of
hal/local, ...). With --budget, exits with status 1 if the Osprey
libraries' text+data (code, read-only data and initialized data: what
goes to flash) exceeds BYTES.

In a link-time optimized image (the size profile on a cross build) the
runtime libraries reach the linker as link-time partitions
(<tmp>.ltrans<N>.ltrans.o); the samples and third-party libraries do not,
so the partitions are Osprey's part. Their components come from the symbol
each section is named after (inlined code counts where it was inlined), and
sections no symbol names (merged string and constant pools) are listed
apart, still as Osprey's.
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
  if LTO_PARTITION.search(base):
    return LTO_GROUP
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


# Osprey runtime components: (label, archive, object names or None for the
# rest of the archive). The first match wins.
COMPONENTS = [
    ("VM interpreter", "libosprey_vm.a", {"interpreter.cc"}),
    ("VM module loader + bytecode verifier", "libosprey_vm.a",
     {"bytecode_module.cc", "verifier.cc", "opcodes.cc", "opcode_mnemonics.cc", "signature.cc"}),
    ("VM contexts, lists, buffers", "libosprey_vm.a", None),
    ("HAL module (VM natives)", "libosprey_modules_hal.a", None),
    ("HAL (buffers, command buffers, validation)", "libosprey_hal.a", None),
    ("static loader + executable library ABI", "libosprey_hal_local.a",
     {"static_library_loader.cc", "library_executable.cc", "local_executable_cache.cc",
      "executable_loader.cc"}),
    ("static loader + executable library ABI", "libosprey_hal_local_default_loaders.a", None),
    ("hal/local (recording, dispatch, semaphores)", "libosprey_hal_local.a", None),
    ("ELF loader", "libosprey_hal_local_loaders_elf.a", None),
    ("cpu-sync driver", "libosprey_drivers_cpu_sync.a", None),
    ("cpu-task driver + task executor", "libosprey_drivers_cpu_task.a", None),
    ("cpu-task driver + task executor", "libosprey_task.a", None),
    ("embedding API + driver registry", "libosprey_embed.a", None),
    ("embedding API + driver registry", "libosprey_drivers.a", None),
    ("embedding API + driver registry", "libosprey_drivers_null.a", None),
    ("simulated NPU driver", "libosprey_drivers_npu.a", None),
    ("simulated NPU driver", "libosprey_drivers_npu_sim.a", None),
    ("base (status, allocators, platform)", "libosprey_base.a", None),
    ("platform checks", "libosprey_platform_checks.a", None),
]


# Components of link-time partitions, by demangled symbol name (the same
# labels as COMPONENTS). The first match wins.
SYMBOL_COMPONENTS = [(label, re.compile(pattern)) for label, pattern in [
    ("VM module loader + bytecode verifier",
     r"^(flatbuffers::|osprey::vm::(BytecodeModule|schema::|ParseSignature|GetOpcode|"
     r"BankFromChar|(\(anonymous namespace\)::)?(\w*Verifier|kOpcodeTable)))"),
    ("VM interpreter", r"^osprey::vm::(Interpreter|\(anonymous namespace\)::)"),
    ("VM contexts, lists, buffers", r"^osprey::vm::"),
    ("HAL module (VM natives)", r"^osprey::modules::hal::"),
    ("ELF loader", r"^osprey::hal::local::loaders::elf::"),
    ("static loader + executable library ABI",
     r"^osprey::hal::local::(StaticLibrary|LibraryExecutable|LocalExecutableCache|"
     r"ExecutableLoader|DefaultLoader)"),
    ("hal/local (recording, dispatch, semaphores)", r"^osprey::hal::local::"),
    ("HAL (buffers, command buffers, validation)", r"^osprey::hal::"),
    ("cpu-sync driver", r"^osprey::drivers::cpu_sync::"),
    ("cpu-task driver + task executor", r"^osprey::(drivers::cpu_task|task)::"),
    ("simulated NPU driver", r"^osprey::drivers::npu::"),
    ("embedding API + driver registry", r"^(osprey::(embed|drivers)::|osprey_)"),
    ("platform checks", r"^osprey::platform::(\(anonymous namespace\)::Check|RunPlatformChecks)"),
    ("base (status, allocators, platform)", r"^osprey::"),
]]
UNNAMED = "unnamed sections (merged strings, constants)"

# Libraries the build makes from third-party sources: not Osprey's part.
THIRD_PARTY = {"libosprey_freertos_kernel.a"}
# A link-time partition of the LTO-compiled runtime libraries.
LTO_PARTITION = re.compile(r"\.ltrans\d+\.ltrans\.o$")
LTO_GROUP = "osprey runtime (link-time partitions)"


def is_osprey(group):
  return (group.startswith("libosprey_") and group not in THIRD_PARTY) or group == LTO_GROUP


def osprey_component(path):
  """The component label of an input file from an Osprey library, or None."""
  m = re.search(r"([^/]+\.a)\(([^)]+?)(\.obj|\.o)?\)", path)
  if not m or not is_osprey(m.group(1)):
    return None
  archive, obj = m.group(1), m.group(2)
  for label, lib, objects in COMPONENTS:
    if lib == archive and (objects is None or obj in objects):
      return label
  return archive


# -ffunction-sections names each section after its symbol.
SYMBOL_PREFIX = re.compile(r"^\.(text|rodata|data|data\.rel\.ro|sdata|srodata|bss|sbss|tbss)"
                           r"(\.unlikely|\.hot|\.startup)?\.(?=_Z|[A-Za-z_])")


def section_symbol(name):
  """The symbol a section is named after, or the section name if none."""
  symbol = re.sub(r"\.lto_priv\.\d+$", "", SYMBOL_PREFIX.sub("", name))
  # Merged string/constant pools and plain sections keep their name.
  if symbol == name or re.match(r"^(str|cst)\d", symbol):
    return name
  return symbol


def symbol_component(symbol):
  """The component label of a demangled symbol from a link-time partition."""
  if symbol.startswith("."):
    return UNNAMED
  # Name the class of vtables and thunks, and drop a template's return type.
  symbol = re.sub(r"^((construction )?vtable for |(non-)?virtual thunk to |VTT for )", "", symbol)
  symbol = re.sub(r"^[\w:<>, *&]+? (?=(osprey|flatbuffers)::)", "", symbol)
  for label, pattern in SYMBOL_COMPONENTS:
    if pattern.search(symbol):
      return label
  return "other symbols"


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
  components = collections.defaultdict(lambda: collections.Counter())
  osprey_sections = []
  lto_sections = []
  for out_section, name, size, path in parse(args.map):
    group = component(path)
    totals[group][kind(out_section)] += size
    label = osprey_component(path)
    if label:
      components[label][kind(out_section)] += size
    elif group == LTO_GROUP:
      lto_sections.append((out_section, name, size))
    if is_osprey(group) and kind(out_section) != "bss":
      osprey_sections.append((size, name, group))
  if lto_sections:
    symbols = demangle([section_symbol(name) for _, name, _ in lto_sections], args.cxxfilt)
    for (out_section, _, size), symbol in zip(lto_sections, symbols):
      components[symbol_component(symbol)][kind(out_section)] += size

  def row(label, c):
    return f"  {label:<38} {c['text']:>8} {c['data']:>6} {c['bss']:>8}"

  print(f"  {'component':<38} {'text':>8} {'data':>6} {'bss':>8}")
  osprey = collections.Counter()
  everything = collections.Counter()
  for group in sorted(totals, key=lambda g: -(totals[g]["text"] + totals[g]["data"])):
    print(row(group, totals[group]))
    everything.update(totals[group])
    if is_osprey(group):
      osprey.update(totals[group])
  print(row("total", everything))
  print(row("osprey runtime libraries", osprey))
  print(f"osprey runtime code size (text+data): {osprey['text'] + osprey['data']} bytes")
  print(f"  {'osprey runtime by component':<44} {'text+data':>9}")
  for label in sorted(components, key=lambda g: -(components[g]["text"] + components[g]["data"])):
    c = components[label]
    print(f"  {label:<44} {c['text'] + c['data']:>9}")
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
    pretty = demangle([section_symbol(name) for _, name, _ in top], args.cxxfilt)
    print(f"largest osprey sections (of {len(osprey_sections)}):")
    for (size, name, group), symbol in zip(top, pretty):
      print(f"  {size:>6}  {group:<22} {symbol}")
  return 1 if over_budget else 0


if __name__ == "__main__":
  sys.exit(main())
