#!/usr/bin/python3
"""Where a compiled module spends its time: per-function samples of one
osprey-benchmark run.

The dispatch library is loaded from memory, so perf cannot name its
functions by itself. This script extracts the library from the module,
finds where the loader mapped its executable segment (the anonymous r-xp
mapping of the segment's size) and attributes every sample there to the
library's symbols (llvm-nm). Samples elsewhere are grouped by DSO.

  scripts/bench/profile.py --build build-models [--onnx MODEL.onnx] \
      MODULE.osp INPUT.npy [...]

With --onnx, the model is also compiled to its dispatch-region form so
each dispatch function is printed with the node it was formed from and
the shapes of its buffers. With --annotate FUNC, the disassembly of that
library function (llvm-objdump-19) is printed with the share of the
function's samples on each instruction, to see which loop the time is in.
"""
import argparse, bisect, collections, os, re, struct, subprocess, sys, tempfile


def extract_elf(module_bytes):
    start = module_bytes.find(b'\x7fELF')
    if start < 0:
        sys.exit('no ELF library in the module')
    d = module_bytes[start:]
    if d[4] != 2:
        sys.exit('only 64-bit host libraries are supported')
    e_phoff, e_shoff = struct.unpack_from('<QQ', d, 0x20)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from('<HHHH', d, 0x36)
    end = e_shoff + e_shentsize * e_shnum
    segments = []
    for i in range(e_phnum):
        p_type, p_flags, p_offset, p_vaddr, _, p_filesz, p_memsz, _ = struct.unpack_from(
            '<IIQQQQQQ', d, e_phoff + i * e_phentsize)
        if p_type == 1:
            segments.append((p_flags, p_vaddr, p_memsz))
    return d[:end], segments


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build-models')
    ap.add_argument('--device', default='cpu-sync')
    ap.add_argument('--seconds', type=float, default=3)
    ap.add_argument('--top', type=int, default=40)
    ap.add_argument('--onnx', help='model the module was compiled from')
    ap.add_argument('--annotate', metavar='FUNC',
                    help='print FUNC disassembled with per-instruction samples')
    ap.add_argument('module')
    ap.add_argument('inputs', nargs='+')
    args = ap.parse_args()

    elf, segments = extract_elf(open(args.module, 'rb').read())
    exec_segs = [s for s in segments if s[0] & 1]
    if len(exec_segs) != 1:
        sys.exit('expected one executable segment, found %d' % len(exec_segs))
    _, exec_vaddr, exec_size = exec_segs[0]

    tmp = tempfile.mkdtemp()
    where = {}
    if args.onnx:
        regions = os.path.join(tmp, 'regions.txt')
        subprocess.run([os.path.join(args.build, 'bin', 'osprey-compile'), args.onnx,
                        '--target=host', '--output-format=dispatch', '-o', regions],
                       check=True)
        for line in open(regions):
            m = re.match(r'\s*region @(\S+) loc\("([^"]*)"\)', line)
            if m:
                where[m.group(1)] = m.group(2)
    lib = os.path.join(tmp, 'library.so')
    open(lib, 'wb').write(elf)
    nm = subprocess.run(['llvm-nm-19', '--defined-only', '-n', '-S', lib],
                        capture_output=True, text=True, check=True).stdout
    symbols = []
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[-2].lower() == 't':
            symbols.append((int(parts[0], 16), parts[-1]))
    symbols.sort()
    starts = [s[0] for s in symbols]

    data = os.path.join(tmp, 'perf.data')
    bench = os.path.join(args.build, 'bin', 'osprey-benchmark')
    cmd = ['perf', 'record', '-q', '-F', '2000', '-o', data, bench,
           '--module=' + args.module, '--device=' + args.device,
           '--benchmark_min_time=%g' % args.seconds]
    cmd += ['--input=@' + i for i in args.inputs]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

    script = subprocess.run(['perf', 'script', '-i', data, '--show-mmap-events',
                             '-F', 'ip,dso'], capture_output=True, text=True).stdout
    base = None
    page = 4096
    seg_pages = (exec_vaddr % page + exec_size + page - 1) // page * page
    counts = collections.Counter()
    addr_counts = collections.Counter()
    total = 0
    for line in script.splitlines():
        m = re.search(r'\[0x([0-9a-f]+)\((0x[0-9a-f]+)\).*r-xp //anon', line)
        if m and 'MMAP' in line:
            if int(m.group(2), 16) == seg_pages:
                base = int(m.group(1), 16) - (exec_vaddr - exec_vaddr % page)
            continue
        parts = line.split()
        if len(parts) < 2 or 'MMAP' in line:
            continue
        try:
            ip = int(parts[0], 16)
        except ValueError:
            continue
        total += 1
        dso = parts[1].strip('()')
        if base is not None and base + exec_vaddr <= ip < base + exec_vaddr + exec_size:
            i = bisect.bisect_right(starts, ip - base) - 1
            name = symbols[i][1] if i >= 0 else '?'
            counts['lib:' + name] += 1
            if name == args.annotate:
                addr_counts[ip - base] += 1
        else:
            counts[os.path.basename(dso)] += 1
    if base is None:
        print('warning: library mapping not found; all samples by DSO')
    print('%d samples' % total)
    lib_total = sum(v for k, v in counts.items() if k.startswith('lib:'))
    print('%5.1f%%  dispatch library' % (100.0 * lib_total / max(total, 1)))
    for name, n in counts.most_common(args.top):
        print('%5.1f%%  %6d  %s  %s' % (100.0 * n / total, n, name,
                                       where.get(name[4:], '')))
    if args.annotate:
        annotate(lib, args.annotate, addr_counts)


def annotate(lib, func, addr_counts):
    """Prints FUNC's disassembly with the percentage of its samples per
    instruction (samples land on the instruction after a slow one, so read
    the hot spots as small ranges)."""
    asm = subprocess.run(['llvm-objdump-19', '-d', '--no-show-raw-insn',
                          '--disassemble-symbols=' + func, lib],
                         capture_output=True, text=True, check=True).stdout
    n = max(sum(addr_counts.values()), 1)
    print('\n%s: %d samples' % (func, sum(addr_counts.values())))
    for line in asm.splitlines():
        m = re.match(r'\s*([0-9a-f]+):', line)
        if not m:
            print('        ' + line)
            continue
        c = addr_counts.get(int(m.group(1), 16), 0)
        print('%6.2f%% %s' % (100.0 * c / n, line) if c else '        ' + line)


if __name__ == '__main__':
    main()
