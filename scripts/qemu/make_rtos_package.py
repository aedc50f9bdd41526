#!/usr/bin/env python3
"""Writes a module package for the FreeRTOS loader (samples/rtos_loader).

A package is the 16-byte header of samples/rtos_loader/module_package.h
("OSPK", version 1, payload size, CRC-32 of the payload) followed by the
.osp module. Options damage it the way the loader must notice:

  --truncate-module N   the sender packages only the first N bytes of the
                        module (header and CRC match: the runtime's
                        verification must catch it)
  --flip-module OFF     flip all bits of the module byte at OFF before
                        packaging (CRC matches; repeatable)
  --truncate-transit N  only N payload bytes arrive (the header still
                        announces the whole module)
  --flip-transit OFF    flip the payload byte at OFF after the CRC was
                        computed, as noise on the link would (repeatable)

Usage: make_rtos_package.py MODULE.osp OUT.pkg [options]
"""
import argparse
import os
import struct
import sys
import zlib


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("module")
  parser.add_argument("out")
  parser.add_argument("--truncate-module", type=int)
  parser.add_argument("--flip-module", type=int, action="append", default=[])
  parser.add_argument("--truncate-transit", type=int)
  parser.add_argument("--flip-transit", type=int, action="append", default=[])
  args = parser.parse_args()

  with open(args.module, "rb") as f:
    module = bytearray(f.read())
  if args.truncate_module is not None:
    module = module[:args.truncate_module]
  for offset in args.flip_module:
    if not 0 <= offset < len(module):
      sys.exit(f"--flip-module {offset}: outside the {len(module)}-byte module")
    module[offset] ^= 0xFF
  header = b"OSPK" + struct.pack("<III", 1, len(module), zlib.crc32(module) & 0xFFFFFFFF)
  payload = bytearray(module)
  for offset in args.flip_transit:
    if not 0 <= offset < len(payload):
      sys.exit(f"--flip-transit {offset}: outside the {len(payload)}-byte module")
    payload[offset] ^= 0xFF
  if args.truncate_transit is not None:
    payload = payload[:args.truncate_transit]
  with open(args.out + ".tmp", "wb") as f:
    f.write(header + payload)
  os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
  main()
