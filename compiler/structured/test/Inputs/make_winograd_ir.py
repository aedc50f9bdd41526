#!/usr/bin/python3
"""Prints graph IR for the Winograd weight transform lit test: three 3x3
convolutions of one 32-channel 56x56 input that read the same constant
weights, two with stride 1 and one with stride 2."""

import struct


def dense(values):
    return '"0x' + b"".join(struct.pack("<f", v) for v in values).hex() + '"'


def main():
    w = [((i * 37) % 101 - 50) / 64.0 for i in range(32 * 32 * 9)]
    print("graph @shared(%x: tensor<1x32x56x56xf32>) {")
    print("  %w = Constant() {value = dense<" + dense(w) +
          ">} : tensor<32x32x3x3xf32>")
    for name, stride, size in (("c", 1, 56), ("d", 2, 28), ("e", 1, 56)):
        print(f"  %{name} = Conv(%x, %w) {{pads = [1, 1, 1, 1], strides = "
              f"[{stride}, {stride}]}} : tensor<1x32x{size}x{size}xf32> "
              f'loc("{name}")')
    print("  return %c, %d, %e")
    print("}")


if __name__ == "__main__":
    main()
